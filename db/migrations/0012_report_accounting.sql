CREATE TABLE "traffic_quarantine" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"journal_id" bigint NOT NULL,
	"server_id" uuid,
	"cluster_id" uuid,
	"stage" text NOT NULL,
	"reason" text NOT NULL,
	"seen_at" timestamp with time zone NOT NULL,
	"quarantined_at" timestamp with time zone DEFAULT now() NOT NULL,
	"sub_ids" uuid[] NOT NULL,
	"sub_up" bigint[] NOT NULL,
	"sub_down" bigint[] NOT NULL,
	"ent_sub" uuid[] NOT NULL,
	"ent_srv" uuid[] NOT NULL,
	"ent_day" date[] NOT NULL,
	"ent_up" bigint[] NOT NULL,
	"ent_down" bigint[] NOT NULL,
	CONSTRAINT "traffic_quarantine_stage" CHECK ("traffic_quarantine"."stage" in ('totals', 'days'))
);
--> statement-breakpoint
ALTER TABLE "servers" ADD COLUMN "report_capacity_mbps" integer DEFAULT 10000 NOT NULL;--> statement-breakpoint
ALTER TABLE "traffic_quarantine" ADD CONSTRAINT "traffic_quarantine_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "traffic_quarantine" ADD CONSTRAINT "traffic_quarantine_cluster_id_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."clusters"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "traffic_quarantine_cluster" ON "traffic_quarantine" USING btree ("cluster_id","quarantined_at");--> statement-breakpoint
ALTER TABLE "servers" ADD CONSTRAINT "servers_report_capacity_range" CHECK ("servers"."report_capacity_mbps" between 1 and 10000000);