CREATE TABLE "config_user_changes" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"cluster_id" uuid NOT NULL,
	"from_users" text NOT NULL,
	"to_users" text NOT NULL,
	"added" jsonb NOT NULL,
	"removed" jsonb NOT NULL,
	"recorded_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "config_user_changes_pair" UNIQUE("cluster_id","from_users","to_users")
);
--> statement-breakpoint
ALTER TABLE "config_user_changes" ADD CONSTRAINT "config_user_changes_cluster_id_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."clusters"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "config_user_changes_cluster_recent" ON "config_user_changes" USING btree ("cluster_id","recorded_at");