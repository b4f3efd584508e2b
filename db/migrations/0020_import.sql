CREATE TABLE "legacy_marzban_secrets" (
	"cluster_id" uuid NOT NULL,
	"prefix" text NOT NULL,
	"tag" text NOT NULL,
	"secret" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "legacy_marzban_secrets_prefix_tag_pk" PRIMARY KEY("prefix","tag")
);
--> statement-breakpoint
CREATE TABLE "subscriber_legacy_links" (
	"host" text DEFAULT '' NOT NULL,
	"path" text NOT NULL,
	"subscriber_id" uuid NOT NULL,
	"not_before" timestamp with time zone,
	CONSTRAINT "subscriber_legacy_links_host_path_pk" PRIMARY KEY("host","path"),
	CONSTRAINT "subscriber_legacy_links_path" CHECK (char_length("subscriber_legacy_links"."path") between 2 and 512 and left("subscriber_legacy_links"."path", 1) = '/'),
	CONSTRAINT "subscriber_legacy_links_host" CHECK (char_length("subscriber_legacy_links"."host") <= 253)
);
--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "note" text;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "trojan_password" text;--> statement-breakpoint
ALTER TABLE "legacy_marzban_secrets" ADD CONSTRAINT "legacy_marzban_secrets_cluster_id_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."clusters"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscriber_legacy_links" ADD CONSTRAINT "subscriber_legacy_links_subscriber_id_subscribers_id_fk" FOREIGN KEY ("subscriber_id") REFERENCES "public"."subscribers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "subscriber_legacy_links_subscriber" ON "subscriber_legacy_links" USING btree ("subscriber_id");--> statement-breakpoint
CREATE UNIQUE INDEX "subscribers_trojan_password" ON "subscribers" USING btree ("trojan_password");--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_note_length" CHECK ("subscribers"."note" is null or char_length("subscribers"."note") <= 1000);--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_trojan_password_length" CHECK ("subscribers"."trojan_password" is null or char_length("subscribers"."trojan_password") between 1 and 128);