CREATE TABLE "subscriber_assignments" (
	"subscriber_id" uuid PRIMARY KEY NOT NULL,
	"inbound_ids" uuid[] NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "subscriber_assignments" ADD CONSTRAINT "subscriber_assignments_subscriber_id_subscribers_id_fk" FOREIGN KEY ("subscriber_id") REFERENCES "public"."subscribers"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
-- Existing choices move over: one row per subscriber with its inbounds in route order.
INSERT INTO "subscriber_assignments" ("subscriber_id", "inbound_ids", "updated_at")
	SELECT "subscriber_id", array_agg("inbound_id" ORDER BY "route_id"), max("assigned_at")
	FROM "assignments" GROUP BY "subscriber_id";
--> statement-breakpoint
DROP TABLE "assignments" CASCADE;
