CREATE TABLE "subscriber_devices" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"subscriber_id" uuid NOT NULL,
	"hwid" text NOT NULL,
	"os" text,
	"os_version" text,
	"model" text,
	"user_agent" text,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "subscriber_devices_hwid_length" CHECK (char_length("subscriber_devices"."hwid") between 1 and 128),
	CONSTRAINT "subscriber_devices_text_length" CHECK (coalesce(char_length("subscriber_devices"."os"), 0) <= 64 and coalesce(char_length("subscriber_devices"."os_version"), 0) <= 64 and coalesce(char_length("subscriber_devices"."model"), 0) <= 64 and coalesce(char_length("subscriber_devices"."user_agent"), 0) <= 256)
);
--> statement-breakpoint
ALTER TABLE "clusters" ADD COLUMN "deviceless_fetches" text DEFAULT 'allow' NOT NULL;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "device_limit" integer;--> statement-breakpoint
ALTER TABLE "subscriber_devices" ADD CONSTRAINT "subscriber_devices_subscriber_id_subscribers_id_fk" FOREIGN KEY ("subscriber_id") REFERENCES "public"."subscribers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "subscriber_devices_hwid" ON "subscriber_devices" USING btree ("subscriber_id","hwid");--> statement-breakpoint
ALTER TABLE "clusters" ADD CONSTRAINT "clusters_deviceless_fetches" CHECK ("clusters"."deviceless_fetches" in ('allow', 'refuse'));--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_device_limit" CHECK ("subscribers"."device_limit" is null or "subscribers"."device_limit" between 1 and 32);