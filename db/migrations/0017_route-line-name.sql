ALTER TABLE "routes" ADD COLUMN "line_name" text DEFAULT 'inbound' NOT NULL;--> statement-breakpoint
ALTER TABLE "routes" ADD CONSTRAINT "routes_line_name" CHECK ("routes"."line_name" in ('inbound', 'route'));--> statement-breakpoint
-- hand-written: security none sends no SNI (core/validation.ts refuses one now); clear the ones stored before.
UPDATE "inbounds" SET "sni" = NULL WHERE "security" = 'none' AND "sni" IS NOT NULL;
