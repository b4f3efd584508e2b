CREATE TABLE "server_agent_state" (
	"server_id" uuid PRIMARY KEY NOT NULL,
	"instance" text,
	"seq" bigint,
	"config_version" text,
	"config_error" text,
	"config_error_at" timestamp with time zone,
	"unserved_inbounds" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"core_kind" text,
	"core_version" text,
	"agent_version" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "server_agent_state_seq" CHECK (("server_agent_state"."instance" is null) = ("server_agent_state"."seq" is null) and ("server_agent_state"."seq" is null or "server_agent_state"."seq" >= 1)),
	CONSTRAINT "server_agent_state_core_kind" CHECK ("server_agent_state"."core_kind" is null or "server_agent_state"."core_kind" in ('xray', 'v2ray'))
);
--> statement-breakpoint
CREATE TABLE "subscriber_traffic" (
	"subscriber_id" uuid NOT NULL,
	"server_id" uuid NOT NULL,
	"day" date NOT NULL,
	"up_bytes" bigint DEFAULT 0 NOT NULL,
	"down_bytes" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "subscriber_traffic_subscriber_id_server_id_day_pk" PRIMARY KEY("subscriber_id","server_id","day"),
	CONSTRAINT "subscriber_traffic_non_negative" CHECK ("subscriber_traffic"."up_bytes" >= 0 and "subscriber_traffic"."down_bytes" >= 0)
);
--> statement-breakpoint
CREATE TABLE "traffic_journal" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"entries" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "inbounds" ADD COLUMN "reality_short_ids" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "inbounds" ADD COLUMN "reality_server_names" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "inbounds" ADD COLUMN "reality_dest" text;--> statement-breakpoint
ALTER TABLE "inbounds" ADD COLUMN "tls_certificate_file" text;--> statement-breakpoint
ALTER TABLE "inbounds" ADD COLUMN "tls_key_file" text;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "traffic_up_bytes" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "traffic_down_bytes" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "last_seen_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "server_agent_state" ADD CONSTRAINT "server_agent_state_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscriber_traffic" ADD CONSTRAINT "subscriber_traffic_subscriber_id_subscribers_id_fk" FOREIGN KEY ("subscriber_id") REFERENCES "public"."subscribers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscriber_traffic" ADD CONSTRAINT "subscriber_traffic_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- Existing Reality inbounds keep their one short id as the first (and only) entry.
UPDATE "inbounds" SET "reality_short_ids" = ARRAY["reality_short_id"] WHERE "reality_short_id" IS NOT NULL;--> statement-breakpoint
-- Traffic counted before per-direction totals existed has no direction: it is kept as download.
UPDATE "subscribers" SET "traffic_down_bytes" = "traffic_used_bytes" WHERE "traffic_used_bytes" <> 0;--> statement-breakpoint
ALTER TABLE "inbounds" DROP COLUMN "reality_short_id";--> statement-breakpoint
ALTER TABLE "inbounds" ADD CONSTRAINT "inbounds_reality_short_ids_format" CHECK (cardinality("inbounds"."reality_short_ids") <= 16 and array_to_string("inbounds"."reality_short_ids", ',') ~ '^([0-9a-f]{0,16})?(,[0-9a-f]{0,16})*$');--> statement-breakpoint
ALTER TABLE "inbounds" ADD CONSTRAINT "inbounds_reality_server_names_count" CHECK (cardinality("inbounds"."reality_server_names") <= 32);--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_traffic_non_negative" CHECK ("subscribers"."traffic_up_bytes" >= 0 and "subscribers"."traffic_down_bytes" >= 0);--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_traffic_used_sum" CHECK ("subscribers"."traffic_used_bytes" = "subscribers"."traffic_up_bytes" + "subscribers"."traffic_down_bytes");