ALTER TABLE "inbounds" ADD COLUMN "transport" text DEFAULT 'tcp' NOT NULL;--> statement-breakpoint
ALTER TABLE "inbounds" ADD COLUMN "path" text;--> statement-breakpoint
ALTER TABLE "inbounds" ADD COLUMN "host" text;--> statement-breakpoint
ALTER TABLE "inbounds" ADD COLUMN "service_name" text;--> statement-breakpoint
ALTER TABLE "inbounds" ADD COLUMN "ss_method" text;--> statement-breakpoint
ALTER TABLE "inbounds" ADD COLUMN "ss_server_key" text;--> statement-breakpoint
ALTER TABLE "inbounds" ADD CONSTRAINT "inbounds_protocol_known" CHECK ("inbounds"."protocol" in ('vless', 'vmess', 'trojan', 'shadowsocks'));--> statement-breakpoint
ALTER TABLE "inbounds" ADD CONSTRAINT "inbounds_transport_known" CHECK ("inbounds"."transport" in ('tcp', 'ws', 'grpc', 'httpupgrade', 'xhttp', 'h2'));