CREATE TABLE "operator_recovery_codes" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"operator_id" uuid NOT NULL,
	"code_hash" text NOT NULL,
	"used_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "api_tokens" DROP CONSTRAINT "api_tokens_scopes_known";--> statement-breakpoint
ALTER TABLE "operators" ADD COLUMN "totp_secret" text;--> statement-breakpoint
ALTER TABLE "operators" ADD COLUMN "totp_pending_secret" text;--> statement-breakpoint
ALTER TABLE "operators" ADD COLUMN "totp_enabled_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "operators" ADD COLUMN "totp_last_step" bigint;--> statement-breakpoint
ALTER TABLE "operator_recovery_codes" ADD CONSTRAINT "operator_recovery_codes_operator_id_operators_id_fk" FOREIGN KEY ("operator_id") REFERENCES "public"."operators"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "operator_recovery_codes_operator" ON "operator_recovery_codes" USING btree ("operator_id");--> statement-breakpoint
ALTER TABLE "api_tokens" ADD CONSTRAINT "api_tokens_scopes_known" CHECK (cardinality("api_tokens"."scopes") > 0 and "api_tokens"."scopes" <@ array['read', 'subscribers:write', 'topology:write', 'backup']::text[]);