CREATE TABLE "plan_routes" (
	"plan_id" uuid NOT NULL,
	"route_id" uuid NOT NULL,
	"cluster_id" uuid NOT NULL,
	CONSTRAINT "plan_routes_plan_id_route_id_pk" PRIMARY KEY("plan_id","route_id")
);
--> statement-breakpoint
CREATE TABLE "plans" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"cluster_id" uuid NOT NULL,
	"name" text NOT NULL,
	"all_routes" boolean DEFAULT false NOT NULL,
	"traffic_limit_bytes" bigint,
	"expiry_days" integer,
	"traffic_reset_strategy" text DEFAULT 'never' NOT NULL,
	"traffic_reset_day" integer,
	"device_limit" integer,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "plans_id_cluster" UNIQUE("id","cluster_id"),
	CONSTRAINT "plans_traffic_limit_positive" CHECK ("plans"."traffic_limit_bytes" is null or "plans"."traffic_limit_bytes" > 0),
	CONSTRAINT "plans_expiry_days" CHECK ("plans"."expiry_days" is null or "plans"."expiry_days" between 1 and 3650),
	CONSTRAINT "plans_reset_strategy" CHECK ("plans"."traffic_reset_strategy" in ('never', 'daily', 'weekly', 'monthly')),
	CONSTRAINT "plans_reset_day" CHECK (case "plans"."traffic_reset_strategy" when 'weekly' then "plans"."traffic_reset_day" between 1 and 7 when 'monthly' then "plans"."traffic_reset_day" between 1 and 31 else "plans"."traffic_reset_day" is null end),
	CONSTRAINT "plans_device_limit" CHECK ("plans"."device_limit" is null or "plans"."device_limit" between 1 and 32)
);
--> statement-breakpoint
ALTER TABLE "clusters" ADD COLUMN "default_plan_id" uuid;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "plan_id" uuid;--> statement-breakpoint
ALTER TABLE "plan_routes" ADD CONSTRAINT "plan_routes_plan_same_cluster" FOREIGN KEY ("plan_id","cluster_id") REFERENCES "public"."plans"("id","cluster_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "plan_routes" ADD CONSTRAINT "plan_routes_route_same_cluster" FOREIGN KEY ("route_id","cluster_id") REFERENCES "public"."routes"("id","cluster_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "plans" ADD CONSTRAINT "plans_cluster_id_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."clusters"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "plan_routes_route" ON "plan_routes" USING btree ("route_id");--> statement-breakpoint
CREATE UNIQUE INDEX "plans_name_ci" ON "plans" USING btree ("cluster_id",lower("name"));--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_plan_same_cluster" FOREIGN KEY ("plan_id","cluster_id") REFERENCES "public"."plans"("id","cluster_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "subscribers_plan" ON "subscribers" USING btree ("cluster_id","plan_id");--> statement-breakpoint
-- hand-written: every cluster gets a default plan "All routes" (all_routes: every route of the cluster, those created later included) and every existing subscriber is on it, so nothing changes for existing data.
INSERT INTO "plans" ("cluster_id", "name", "all_routes") SELECT "id", 'All routes', true FROM "clusters";--> statement-breakpoint
UPDATE "clusters" c SET "default_plan_id" = p."id" FROM "plans" p WHERE p."cluster_id" = c."id";--> statement-breakpoint
UPDATE "subscribers" s SET "plan_id" = c."default_plan_id" FROM "clusters" c WHERE c."id" = s."cluster_id";--> statement-breakpoint
ALTER TABLE "subscribers" ALTER COLUMN "plan_id" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "clusters" ADD CONSTRAINT "clusters_default_plan_same_cluster" FOREIGN KEY ("default_plan_id","id") REFERENCES "public"."plans"("id","cluster_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE FUNCTION "routeboard_cluster_default_plan"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE plan_id uuid;
BEGIN
  -- A new cluster gets its "All routes" plan as its default, so a fresh install works as before plans.
  IF NEW."default_plan_id" IS NULL THEN
    INSERT INTO "plans" ("cluster_id", "name", "all_routes") VALUES (NEW."id", 'All routes', true) RETURNING "id" INTO plan_id;
    UPDATE "clusters" SET "default_plan_id" = plan_id WHERE "id" = NEW."id";
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "clusters_default_plan" AFTER INSERT ON "clusters" FOR EACH ROW EXECUTE FUNCTION "routeboard_cluster_default_plan"();--> statement-breakpoint
CREATE FUNCTION "routeboard_subscriber_plan"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A subscriber inserted without a plan is on the cluster's default plan.
  IF NEW."plan_id" IS NULL THEN
    SELECT "default_plan_id" INTO NEW."plan_id" FROM "clusters" WHERE "id" = NEW."cluster_id";
  END IF;
  RETURN NEW;
END $$;--> statement-breakpoint
CREATE TRIGGER "subscribers_plan" BEFORE INSERT ON "subscribers" FOR EACH ROW WHEN (NEW."plan_id" IS NULL) EXECUTE FUNCTION "routeboard_subscriber_plan"();
