CREATE TABLE "subscriber_usage_periods" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"subscriber_id" uuid NOT NULL,
	"period_start" timestamp with time zone NOT NULL,
	"period_end" timestamp with time zone NOT NULL,
	"up_bytes" bigint NOT NULL,
	"down_bytes" bigint NOT NULL,
	"reason" text NOT NULL,
	CONSTRAINT "subscriber_usage_periods_non_negative" CHECK ("subscriber_usage_periods"."up_bytes" >= 0 and "subscriber_usage_periods"."down_bytes" >= 0),
	CONSTRAINT "subscriber_usage_periods_reason" CHECK ("subscriber_usage_periods"."reason" in ('schedule', 'manual', 'bulk'))
);
--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "traffic_reset_strategy" text DEFAULT 'never' NOT NULL;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "traffic_reset_day" integer;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "usage_period_start" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
UPDATE "subscribers" SET "usage_period_start" = "created_at";--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "next_reset_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "hold_days" integer;--> statement-breakpoint
ALTER TABLE "subscriber_usage_periods" ADD CONSTRAINT "subscriber_usage_periods_subscriber_id_subscribers_id_fk" FOREIGN KEY ("subscriber_id") REFERENCES "public"."subscribers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "subscriber_usage_periods_subscriber" ON "subscriber_usage_periods" USING btree ("subscriber_id","period_end");--> statement-breakpoint
CREATE INDEX "subscribers_next_reset" ON "subscribers" USING btree ("next_reset_at") WHERE "subscribers"."next_reset_at" is not null;--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_reset_strategy" CHECK ("subscribers"."traffic_reset_strategy" in ('never', 'daily', 'weekly', 'monthly'));--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_reset_day" CHECK (case "subscribers"."traffic_reset_strategy" when 'weekly' then "subscribers"."traffic_reset_day" between 1 and 7 when 'monthly' then "subscribers"."traffic_reset_day" between 1 and 31 else "subscribers"."traffic_reset_day" is null end);--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_hold_days" CHECK ("subscribers"."hold_days" is null or ("subscribers"."hold_days" > 0 and "subscribers"."expires_at" is null));