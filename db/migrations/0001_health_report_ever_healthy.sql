ALTER TABLE "server_health" ADD COLUMN "mesh_reason" text;--> statement-breakpoint
ALTER TABLE "server_health" ADD COLUMN "report_ever_healthy" boolean DEFAULT false NOT NULL;