import { generateKeyPairSync, randomBytes } from "node:crypto";

/** An X25519 key pair as Xray expects it for Reality: raw 32-byte keys, base64url. */
export function generateRealityKeys(): { publicKey: string; privateKey: string; shortId: string } {
  const { publicKey, privateKey } = generateKeyPairSync("x25519");
  const pub = publicKey.export({ format: "jwk" }).x!;
  const priv = privateKey.export({ format: "jwk" }).d!;
  return { publicKey: pub, privateKey: priv, shortId: randomBytes(8).toString("hex") };
}
