CREATE TYPE "public"."inbound_security" AS ENUM('reality', 'tls', 'none');--> statement-breakpoint
CREATE TYPE "public"."operator_role" AS ENUM('owner', 'admin', 'viewer');--> statement-breakpoint
CREATE TYPE "public"."route_algorithm" AS ENUM('least-traffic', 'round-robin');--> statement-breakpoint
CREATE TYPE "public"."server_role" AS ENUM('master', 'node', 'both');--> statement-breakpoint
CREATE TABLE "assignments" (
	"subscriber_id" uuid NOT NULL,
	"route_id" uuid NOT NULL,
	"inbound_id" uuid NOT NULL,
	"reason" text NOT NULL,
	"assigned_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "assignments_subscriber_id_route_id_pk" PRIMARY KEY("subscriber_id","route_id")
);
--> statement-breakpoint
CREATE TABLE "audit_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"cluster_id" uuid,
	"operator_id" uuid,
	"operator_name" text NOT NULL,
	"action" text NOT NULL,
	"entity_type" text NOT NULL,
	"entity_id" text,
	"summary" text NOT NULL,
	"before" jsonb,
	"after" jsonb,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "clusters" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"probe_config" jsonb,
	"report_interval_s" integer DEFAULT 60 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "inbounds" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"cluster_id" uuid NOT NULL,
	"server_id" uuid NOT NULL,
	"route_id" uuid,
	"name" text NOT NULL,
	"port" integer NOT NULL,
	"protocol" text DEFAULT 'vless' NOT NULL,
	"security" "inbound_security" DEFAULT 'reality' NOT NULL,
	"sni" text,
	"reality_public_key" text,
	"reality_private_key" text,
	"reality_short_id" text,
	"is_fallback" boolean DEFAULT false NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "inbounds_port_range" CHECK ("inbounds"."port" between 1 and 65535),
	CONSTRAINT "inbounds_fallback_needs_route" CHECK (not "inbounds"."is_fallback" or "inbounds"."route_id" is not null)
);
--> statement-breakpoint
CREATE TABLE "login_throttle" (
	"key" text PRIMARY KEY NOT NULL,
	"failures" integer DEFAULT 0 NOT NULL,
	"last_failure_at" timestamp with time zone NOT NULL,
	"blocked_until" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "mesh_checks" (
	"observer_id" uuid NOT NULL,
	"target_id" uuid NOT NULL,
	"last_ok" boolean NOT NULL,
	"fail_streak" integer DEFAULT 0 NOT NULL,
	"rtt_ms" real,
	"checked_at" timestamp with time zone NOT NULL,
	CONSTRAINT "mesh_checks_observer_id_target_id_pk" PRIMARY KEY("observer_id","target_id")
);
--> statement-breakpoint
CREATE TABLE "operators" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"username" text NOT NULL,
	"password_hash" text NOT NULL,
	"role" "operator_role" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "routes" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"cluster_id" uuid NOT NULL,
	"name" text NOT NULL,
	"flag" text,
	"algorithm" "route_algorithm" DEFAULT 'least-traffic' NOT NULL,
	"hysteresis" real DEFAULT 0.25 NOT NULL,
	"position" integer DEFAULT 0 NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "routes_id_cluster" UNIQUE("id","cluster_id"),
	CONSTRAINT "routes_hysteresis_range" CHECK ("routes"."hysteresis" >= 0 and "routes"."hysteresis" <= 10)
);
--> statement-breakpoint
CREATE TABLE "server_health" (
	"server_id" uuid PRIMARY KEY NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"status_since" timestamp with time zone DEFAULT now() NOT NULL,
	"status_reason" text,
	"ever_succeeded" boolean DEFAULT false NOT NULL,
	"probe_healthy" boolean,
	"probe_fail_streak" integer DEFAULT 0 NOT NULL,
	"probe_ok_streak" integer DEFAULT 0 NOT NULL,
	"last_probe_at" timestamp with time zone,
	"last_probe_ok" boolean,
	"last_probe_code" integer,
	"last_probe_latency_ms" real,
	"last_probe_reason" text,
	"mesh_unreachable" boolean DEFAULT false NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "server_metrics" (
	"server_id" uuid PRIMARY KEY NOT NULL,
	"reported_at" timestamp with time zone NOT NULL,
	"listener_alive" boolean NOT NULL,
	"service_running" boolean NOT NULL,
	"users_online" integer NOT NULL,
	"rx_bps" double precision NOT NULL,
	"tx_bps" double precision NOT NULL,
	"cpu" real NOT NULL,
	"memory" real NOT NULL,
	"peak_bps" double precision DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "server_metrics_history" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"server_id" uuid NOT NULL,
	"bucket_start" timestamp with time zone NOT NULL,
	"samples" integer NOT NULL,
	"users_online_avg" real NOT NULL,
	"traffic_bps_max" double precision NOT NULL,
	"traffic_bps_avg" double precision NOT NULL,
	"cpu_avg" real NOT NULL
);
--> statement-breakpoint
CREATE TABLE "servers" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"cluster_id" uuid NOT NULL,
	"name" text NOT NULL,
	"address" text NOT NULL,
	"role" "server_role" DEFAULT 'node' NOT NULL,
	"coefficient" real DEFAULT 1 NOT NULL,
	"capacity_mbps" integer,
	"enabled" boolean DEFAULT true NOT NULL,
	"agent_token_hash" text NOT NULL,
	"probe_override" jsonb,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "servers_id_cluster" UNIQUE("id","cluster_id"),
	CONSTRAINT "servers_coefficient_range" CHECK ("servers"."coefficient" >= 0.1 and "servers"."coefficient" <= 100),
	CONSTRAINT "servers_capacity_positive" CHECK ("servers"."capacity_mbps" is null or "servers"."capacity_mbps" > 0)
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"operator_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone,
	"user_agent" text
);
--> statement-breakpoint
CREATE TABLE "settings" (
	"key" text PRIMARY KEY NOT NULL,
	"value" jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "subscribers" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"cluster_id" uuid NOT NULL,
	"name" text NOT NULL,
	"vless_uuid" uuid DEFAULT gen_random_uuid() NOT NULL,
	"token" text NOT NULL,
	"expires_at" timestamp with time zone,
	"traffic_limit_bytes" bigint,
	"traffic_used_bytes" bigint DEFAULT 0 NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "assignments" ADD CONSTRAINT "assignments_subscriber_id_subscribers_id_fk" FOREIGN KEY ("subscriber_id") REFERENCES "public"."subscribers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "assignments" ADD CONSTRAINT "assignments_route_id_routes_id_fk" FOREIGN KEY ("route_id") REFERENCES "public"."routes"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "assignments" ADD CONSTRAINT "assignments_inbound_id_inbounds_id_fk" FOREIGN KEY ("inbound_id") REFERENCES "public"."inbounds"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audit_log" ADD CONSTRAINT "audit_log_cluster_id_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."clusters"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audit_log" ADD CONSTRAINT "audit_log_operator_id_operators_id_fk" FOREIGN KEY ("operator_id") REFERENCES "public"."operators"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "inbounds" ADD CONSTRAINT "inbounds_server_same_cluster" FOREIGN KEY ("server_id","cluster_id") REFERENCES "public"."servers"("id","cluster_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "inbounds" ADD CONSTRAINT "inbounds_route_same_cluster" FOREIGN KEY ("route_id","cluster_id") REFERENCES "public"."routes"("id","cluster_id") ON DELETE set null (route_id) ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mesh_checks" ADD CONSTRAINT "mesh_checks_observer_id_servers_id_fk" FOREIGN KEY ("observer_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mesh_checks" ADD CONSTRAINT "mesh_checks_target_id_servers_id_fk" FOREIGN KEY ("target_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "routes" ADD CONSTRAINT "routes_cluster_id_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."clusters"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "server_health" ADD CONSTRAINT "server_health_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "server_metrics" ADD CONSTRAINT "server_metrics_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "server_metrics_history" ADD CONSTRAINT "server_metrics_history_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "servers" ADD CONSTRAINT "servers_cluster_id_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."clusters"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_operator_id_operators_id_fk" FOREIGN KEY ("operator_id") REFERENCES "public"."operators"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_cluster_id_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."clusters"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "assignments_inbound" ON "assignments" USING btree ("inbound_id");--> statement-breakpoint
CREATE INDEX "audit_log_cluster_at" ON "audit_log" USING btree ("cluster_id","at");--> statement-breakpoint
CREATE UNIQUE INDEX "clusters_name_ci" ON "clusters" USING btree (lower("name"));--> statement-breakpoint
CREATE UNIQUE INDEX "inbounds_port_per_server" ON "inbounds" USING btree ("server_id","port");--> statement-breakpoint
CREATE UNIQUE INDEX "inbounds_one_fallback_per_route" ON "inbounds" USING btree ("route_id") WHERE "inbounds"."is_fallback";--> statement-breakpoint
CREATE INDEX "inbounds_route" ON "inbounds" USING btree ("route_id");--> statement-breakpoint
CREATE UNIQUE INDEX "operators_username_ci" ON "operators" USING btree (lower("username"));--> statement-breakpoint
CREATE UNIQUE INDEX "routes_name_ci" ON "routes" USING btree ("cluster_id",lower("name"));--> statement-breakpoint
CREATE INDEX "routes_position" ON "routes" USING btree ("cluster_id","position");--> statement-breakpoint
CREATE UNIQUE INDEX "server_metrics_history_bucket" ON "server_metrics_history" USING btree ("server_id","bucket_start");--> statement-breakpoint
CREATE UNIQUE INDEX "servers_agent_token_hash" ON "servers" USING btree ("agent_token_hash");--> statement-breakpoint
CREATE UNIQUE INDEX "servers_name_ci" ON "servers" USING btree ("cluster_id",lower("name"));--> statement-breakpoint
CREATE INDEX "sessions_operator" ON "sessions" USING btree ("operator_id");--> statement-breakpoint
CREATE UNIQUE INDEX "subscribers_token" ON "subscribers" USING btree ("token");--> statement-breakpoint
CREATE UNIQUE INDEX "subscribers_vless_uuid" ON "subscribers" USING btree ("vless_uuid");--> statement-breakpoint
CREATE INDEX "subscribers_cluster" ON "subscribers" USING btree ("cluster_id");