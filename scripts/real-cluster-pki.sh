#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# real-cluster-pki.sh DIR: the TLS and auth material a loopback
# kube-apiserver v1.20.2 needs (it has no plain-HTTP port), made with openssl.
#
# Files written into DIR:
#   ca.crt, ca.key          a self-signed CA (--client-ca-file; clients trust ca.crt)
#   server.crt, server.key  serving cert signed by the CA for IP:127.0.0.1 and
#                           DNS:localhost (--tls-cert-file, --tls-private-key-file)
#   token                   a random bearer token, no newline
#   tokens.csv              "TOKEN,admin,admin-uid,system:masters" (--token-auth-file)
#   sa.key, sa.pub          RSA key pair for service-account tokens
#                           (--service-account-signing-key-file, --service-account-key-file)
#
# Idempotent: files already present are kept, so a DIR can be reused across
# runs; only missing pieces are made (a new CA also means a new serving cert).
# Each file appears atomically. Certificates are valid for ten years.
# Prints NAME=PATH lines on stdout for the caller's convenience.

set -euo pipefail

if (($# != 1)); then
  echo "usage: $0 DIR" >&2
  exit 2
fi
command -v openssl >/dev/null || { echo "real-cluster-pki: openssl is not installed" >&2; exit 1; }

DIR=$1
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
readonly DIR
readonly DAYS=3650

# Private keys and the token must not be readable by others.
umask 077

# Serialise concurrent calls on the same DIR.
exec 9>"$DIR/.pki.lock"
flock 9

TMP=$(mktemp -d "$DIR/.pki-tmp.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# Move a finished file from TMP into DIR (same file system: atomic).
install_file() { mv -f "$TMP/$1" "$DIR/$1"; }

new_ca=false
if [[ ! -s $DIR/ca.crt || ! -s $DIR/ca.key ]]; then
  openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days "$DAYS" \
    -keyout "$TMP/ca.key" -out "$TMP/ca.crt" \
    -subj "/CN=watchlife-test-ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
    2>/dev/null
  install_file ca.key
  install_file ca.crt
  new_ca=true
fi

if $new_ca || [[ ! -s $DIR/server.crt || ! -s $DIR/server.key ]]; then
  openssl req -new -nodes -newkey rsa:2048 -sha256 \
    -keyout "$TMP/server.key" -out "$TMP/server.csr" \
    -subj "/CN=localhost" 2>/dev/null
  cat >"$TMP/server.ext" <<'EOF'
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
EOF
  openssl x509 -req -sha256 -days "$DAYS" \
    -in "$TMP/server.csr" -CA "$DIR/ca.crt" -CAkey "$DIR/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" \
    -extfile "$TMP/server.ext" -out "$TMP/server.crt" 2>/dev/null
  install_file server.key
  install_file server.crt
fi

if [[ ! -s $DIR/token ]]; then
  printf '%s' "$(openssl rand -hex 32)" >"$TMP/token"
  install_file token
fi
# tokens.csv always follows the token file, so a hand-edited token still works.
printf '%s,admin,admin-uid,system:masters\n' "$(cat "$DIR/token")" >"$TMP/tokens.csv"
if ! cmp -s "$TMP/tokens.csv" "$DIR/tokens.csv"; then
  install_file tokens.csv
fi

if [[ ! -s $DIR/sa.key || ! -s $DIR/sa.pub ]]; then
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$TMP/sa.key" 2>/dev/null
  openssl pkey -in "$TMP/sa.key" -pubout -out "$TMP/sa.pub" 2>/dev/null
  install_file sa.key
  install_file sa.pub
fi

# The public half is no secret.
chmod 644 "$DIR/ca.crt" "$DIR/server.crt" "$DIR/sa.pub"

printf 'CA_CRT=%s\nCA_KEY=%s\nSERVER_CRT=%s\nSERVER_KEY=%s\nTOKEN_FILE=%s\nTOKEN_AUTH_FILE=%s\nSA_KEY=%s\nSA_PUB=%s\n' \
  "$DIR/ca.crt" "$DIR/ca.key" "$DIR/server.crt" "$DIR/server.key" \
  "$DIR/token" "$DIR/tokens.csv" "$DIR/sa.key" "$DIR/sa.pub"
