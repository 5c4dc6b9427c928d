#!/bin/sh
# One-shot, idempotent: the rollups' bucket and least-privilege InfluxDB tokens for energy-etl and
# Grafana. Runs in the InfluxDB image (its `influx` CLI) as docker-compose.yml's influx-init
# service, or by hand against any InfluxDB 2.x (INFLUX_HOST, INFLUX_TOKEN = an all-access/operator
# token, INFLUX_ORG, INFLUX_BUCKET; ROLLUP_BUCKET, default INFLUX_BUCKET/rollups; TOKEN_DIR where
# the tokens are written).
#   ROLLUP_BUCKET:        created when missing, infinite retention, shard groups of ten years; InfluxDB
#                         maps it to INFLUX_BUCKET's database, retention policy after the /
#   TOKEN_DIR/energy-etl: read and write on INFLUX_BUCKET and ROLLUP_BUCKET (energy-etl's
#                         INFLUX_TOKEN: the rollups and audit read with InfluxQL)
#   TOKEN_DIR/grafana:    read on INFLUX_BUCKET and ROLLUP_BUCKET (Grafana's datasource token)
# A token file that exists, whose token InfluxDB still knows and whose authorization is of this
# script's current description is kept; otherwise a new token is created (and the authorizations
# with its description, or with the description an older version of this script gave it, are
# deleted).
set -eu

: "${INFLUX_HOST:?set INFLUX_HOST, e.g. http://influxdb:8086}"
: "${INFLUX_TOKEN:?set INFLUX_TOKEN to an all-access (operator) token}"
: "${INFLUX_ORG:?set INFLUX_ORG}"
: "${INFLUX_BUCKET:?set INFLUX_BUCKET}"
ROLLUP_BUCKET="${ROLLUP_BUCKET:-$INFLUX_BUCKET/rollups}"
TOKEN_DIR="${TOKEN_DIR:-/run/influx-tokens}"
ETL_UID="${ETL_UID:-10001}"
GRAFANA_UID="${GRAFANA_UID:-472}"
export INFLUX_HOST INFLUX_TOKEN INFLUX_ORG

mkdir -p "$TOKEN_DIR"
umask 077

# The bucket's line of `influx bucket list`: ID, name, retention, shard group duration, ...
bucket_line() {
  influx bucket list --name "$1" --hide-headers | awk 'NR == 1'
}

bucket_id=$(bucket_line "$INFLUX_BUCKET" | awk '{ print $1 }')
if [ -z "$bucket_id" ]; then
  echo "influx-init: bucket $INFLUX_BUCKET not found in org $INFLUX_ORG" >&2
  exit 1
fi

# The rollups' bucket, after the raw one (whose retention policy stays the database's default).
if [ -z "$(bucket_line "$ROLLUP_BUCKET")" ]; then
  influx bucket create --name "$ROLLUP_BUCKET" --org "$INFLUX_ORG" --retention 0 > /dev/null
  echo "influx-init: bucket $ROLLUP_BUCKET created"
fi
set -- $(bucket_line "$ROLLUP_BUCKET")
if [ -z "${1:-}" ]; then
  echo "influx-init: bucket $ROLLUP_BUCKET not found in org $INFLUX_ORG" >&2
  exit 1
fi
rollup_id="$1"
# `influx bucket create` cannot give an infinite bucket a shard group duration (it sends 30 days
# of retention with it: influxdata/influx-cli#524); `update` can. A bucket still at InfluxDB's
# default for infinite retention (a week) gets ten years; one set otherwise is kept.
if [ "${3:-}" = infinite ] && [ "${4:-}" = 168h0m0s ]; then
  influx bucket update --id "$rollup_id" --retention 0 --shard-group-duration 87360h > /dev/null
  echo "influx-init: bucket $ROLLUP_BUCKET keeps data forever in shard groups of 87360h (ten years)"
fi

# The ids of the authorizations with this description ("id" comes before "description").
ids_described() {
  influx auth list --json | awk -v want="$1" '
    /"id":/ { id = $0; sub(/.*"id": *"/, "", id); sub(/".*/, "", id) }
    /"description":/ { d = $0; sub(/.*"description": *"/, "", d); sub(/",? *$/, "", d)
      if (d == want) print id }'
}

# ensure NAME DESCRIPTION OLD_DESCRIPTION OWNER_UID PERMISSION_FLAGS...
ensure() {
  name="$1" description="$2" old="$3" owner="$4"
  shift 4
  file="$TOKEN_DIR/$name"
  if [ -s "$file" ] && influx auth list --json | grep -q "\"token\": \"$(cat "$file")\"" &&
    [ -n "$(ids_described "$description")" ]; then
    echo "influx-init: $name token exists, kept"
  else
    for id in $(ids_described "$description") $(ids_described "$old"); do
      influx auth delete --id "$id" > /dev/null
    done
    token=$(influx auth create --org "$INFLUX_ORG" "$@" --description "$description" --json \
      | sed -n 's/.*"token": *"\([^"]*\)".*/\1/p')
    if [ -z "$token" ]; then
      echo "influx-init: could not create the $name token" >&2
      exit 1
    fi
    printf '%s' "$token" > "$file.tmp"
    mv "$file.tmp" "$file"
    echo "influx-init: $name token created ($description)"
  fi
  chown "$owner" "$file"
  chmod 0400 "$file"
}

both="$INFLUX_BUCKET, $ROLLUP_BUCKET"
ensure energy-etl "energy-etl reader-writer ($both)" "energy-etl writer ($INFLUX_BUCKET)" \
  "$ETL_UID" --read-bucket "$bucket_id" --write-bucket "$bucket_id" \
  --read-bucket "$rollup_id" --write-bucket "$rollup_id"
ensure grafana "grafana reader ($both)" "grafana reader ($INFLUX_BUCKET)" "$GRAFANA_UID" \
  --read-bucket "$bucket_id" --read-bucket "$rollup_id"
