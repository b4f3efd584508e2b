CREATE TABLE "subscriber_assignments" (
	"subscriber_id" uuid PRIMARY KEY NOT NULL,
	"choices" jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "subscriber_assignments" ADD CONSTRAINT "subscriber_assignments_subscriber_id_subscribers_id_fk" FOREIGN KEY ("subscriber_id") REFERENCES "public"."subscribers"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
-- Existing choices move over: one row per subscriber, routeId → inboundId.
INSERT INTO "subscriber_assignments" ("subscriber_id", "choices", "updated_at")
	SELECT "subscriber_id", jsonb_object_agg("route_id"::text, "inbound_id"::text), max("assigned_at")
	FROM "assignments" GROUP BY "subscriber_id";
--> statement-breakpoint
DROP TABLE "assignments" CASCADE;
