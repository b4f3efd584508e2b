ALTER TABLE "server_metrics" ADD COLUMN "load_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "server_metrics" ADD COLUMN "load_users" integer;--> statement-breakpoint
ALTER TABLE "server_metrics" ADD COLUMN "load_bps" double precision;