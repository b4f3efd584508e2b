ALTER TABLE "server_health" ADD COLUMN "heartbeat_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "server_health" ADD COLUMN "heartbeat_lost_at" timestamp with time zone;