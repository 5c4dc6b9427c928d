#!/bin/sh
# One-shot, idempotent: least-privilege InfluxDB tokens for energy-etl and Grafana.
# Runs in the InfluxDB image (its `influx` CLI) as docker-compose.yml's influx-init service, or
# by hand against any InfluxDB 2.x (INFLUX_HOST, INFLUX_TOKEN = an all-access/operator token,
# INFLUX_ORG, INFLUX_BUCKET; TOKEN_DIR where the tokens are written).
#   TOKEN_DIR/energy-etl: write-only on INFLUX_BUCKET (energy-etl's INFLUX_TOKEN)
#   TOKEN_DIR/grafana:    read-only on INFLUX_BUCKET (Grafana's datasource token)
# A token file that exists and whose token InfluxDB still knows is kept; otherwise a new token
# is created (and the stale authorization with the same description is deleted).
set -eu

: "${INFLUX_HOST:?set INFLUX_HOST, e.g. http://influxdb:8086}"
: "${INFLUX_TOKEN:?set INFLUX_TOKEN to an all-access (operator) token}"
: "${INFLUX_ORG:?set INFLUX_ORG}"
: "${INFLUX_BUCKET:?set INFLUX_BUCKET}"
TOKEN_DIR="${TOKEN_DIR:-/run/influx-tokens}"
ETL_UID="${ETL_UID:-10001}"
GRAFANA_UID="${GRAFANA_UID:-472}"
export INFLUX_HOST INFLUX_TOKEN INFLUX_ORG

mkdir -p "$TOKEN_DIR"
umask 077

bucket_id=$(influx bucket list --name "$INFLUX_BUCKET" --hide-headers | awk 'NR == 1 { print $1 }')
if [ -z "$bucket_id" ]; then
  echo "influx-init: bucket $INFLUX_BUCKET not found in org $INFLUX_ORG" >&2
  exit 1
fi

# The ids of the authorizations with this description ("id" comes before "description").
ids_described() {
  influx auth list --json | awk -v want="$1" '
    /"id":/ { id = $0; sub(/.*"id": *"/, "", id); sub(/".*/, "", id) }
    /"description":/ { d = $0; sub(/.*"description": *"/, "", d); sub(/",? *$/, "", d)
      if (d == want) print id }'
}

# ensure NAME DESCRIPTION OWNER_UID PERMISSION_FLAG
ensure() {
  file="$TOKEN_DIR/$1"
  if [ -s "$file" ] && influx auth list --json | grep -q "\"token\": \"$(cat "$file")\""; then
    echo "influx-init: $1 token exists, kept"
  else
    for id in $(ids_described "$2"); do influx auth delete --id "$id" > /dev/null; done
    token=$(influx auth create --org "$INFLUX_ORG" "$4" "$bucket_id" --description "$2" --json \
      | sed -n 's/.*"token": *"\([^"]*\)".*/\1/p')
    if [ -z "$token" ]; then
      echo "influx-init: could not create the $1 token" >&2
      exit 1
    fi
    printf '%s' "$token" > "$file.tmp"
    mv "$file.tmp" "$file"
    echo "influx-init: $1 token created ($2)"
  fi
  chown "$3" "$file"
  chmod 0400 "$file"
}

ensure energy-etl "energy-etl writer ($INFLUX_BUCKET)" "$ETL_UID" --write-bucket
ensure grafana "grafana reader ($INFLUX_BUCKET)" "$GRAFANA_UID" --read-bucket
