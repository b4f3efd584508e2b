CREATE TABLE "alert_deliveries" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"event_id" uuid NOT NULL,
	"target_id" uuid NOT NULL,
	"state" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone NOT NULL,
	"last_attempt_at" timestamp with time zone,
	"last_error" text,
	"delivered_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "alert_deliveries_event_target" UNIQUE("event_id","target_id"),
	CONSTRAINT "alert_deliveries_state" CHECK ("alert_deliveries"."state" in ('pending', 'delivered', 'failed'))
);
--> statement-breakpoint
CREATE TABLE "alert_events" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"type" text NOT NULL,
	"cluster_id" uuid,
	"cluster_name" text,
	"occurred_at" timestamp with time zone NOT NULL,
	"data" jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "alert_targets" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"cluster_id" uuid,
	"url" text,
	"secret" text,
	"bot_token" text,
	"chat_id" text,
	"events" text[] NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"last_delivery_at" timestamp with time zone,
	"last_failure_at" timestamp with time zone,
	"last_error" text,
	"failing" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "alert_targets_kind" CHECK ("alert_targets"."kind" in ('webhook', 'telegram')),
	CONSTRAINT "alert_targets_fields" CHECK (("alert_targets"."kind" = 'webhook' and "alert_targets"."url" is not null and "alert_targets"."secret" is not null) or ("alert_targets"."kind" = 'telegram' and "alert_targets"."bot_token" is not null and "alert_targets"."chat_id" is not null))
);
--> statement-breakpoint
CREATE TABLE "route_alert_state" (
	"route_id" uuid PRIMARY KEY NOT NULL,
	"in_panic" boolean NOT NULL,
	"announced" boolean DEFAULT false NOT NULL,
	"changed_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "subscriber_alert_state" (
	"subscriber_id" uuid PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"expires_at" timestamp with time zone,
	"changed_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "alert_deliveries" ADD CONSTRAINT "alert_deliveries_event_id_alert_events_id_fk" FOREIGN KEY ("event_id") REFERENCES "public"."alert_events"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "alert_deliveries" ADD CONSTRAINT "alert_deliveries_target_id_alert_targets_id_fk" FOREIGN KEY ("target_id") REFERENCES "public"."alert_targets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "alert_targets" ADD CONSTRAINT "alert_targets_cluster_id_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."clusters"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "route_alert_state" ADD CONSTRAINT "route_alert_state_route_id_routes_id_fk" FOREIGN KEY ("route_id") REFERENCES "public"."routes"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscriber_alert_state" ADD CONSTRAINT "subscriber_alert_state_subscriber_id_subscribers_id_fk" FOREIGN KEY ("subscriber_id") REFERENCES "public"."subscribers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "alert_deliveries_due" ON "alert_deliveries" USING btree ("state","next_attempt_at");--> statement-breakpoint
CREATE INDEX "alert_deliveries_target" ON "alert_deliveries" USING btree ("target_id","id");--> statement-breakpoint
CREATE INDEX "alert_events_occurred" ON "alert_events" USING btree ("occurred_at");--> statement-breakpoint
CREATE UNIQUE INDEX "alert_targets_name_ci" ON "alert_targets" USING btree (lower("name"));