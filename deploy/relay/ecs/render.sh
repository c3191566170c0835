#!/bin/sh
# Fills in this folder's templates for every shard, for `aws ecs … --cli-input-json` and `aws iam`:
#   deploy/relay/ecs/render.sh OUT_DIR
# with ACCOUNT, AWS_REGION, IMAGE, SECRET_ARN, CLUSTER, SUBNET, GROUP and SHARDS in the environment
# (the walkthrough in README.md sets them). Writes OUT_DIR/task-<i>.json and OUT_DIR/service-<i>.json
# for i = 0 … SHARDS − 1 (shard i of SHARDS) and OUT_DIR/execution-role-secret.json. Needs jq.
set -eu
here=$(dirname "$0")
out=${1:?usage: render.sh OUT_DIR}
for name in ACCOUNT AWS_REGION IMAGE SECRET_ARN CLUSTER SUBNET GROUP SHARDS; do
  eval "value=\${$name:-}"
  [ -n "$value" ] || { echo "render.sh: $name is not set" >&2; exit 2; }
done
case $SHARDS in
  '' | *[!0-9]* | 0*) echo "render.sh: SHARDS must be a whole number from 1, not '$SHARDS'" >&2; exit 2 ;;
esac
mkdir -p "$out"

# Each placeholder <…> of the templates, and the shard's own names (shard-0 → shard-<i>).
fill='walk(if type == "string" then
    gsub("<account-id>"; $account) | gsub("<region>"; $region) | gsub("<image>"; $image)
    | gsub("<secret-arn>"; $secret) | gsub("<cluster>"; $cluster) | gsub("<subnet-id>"; $subnet)
    | gsub("<security-group-id>"; $group) | gsub("shard-0"; "shard-\($i)")
  else . end)'
render() {
  jq --arg account "$ACCOUNT" --arg region "$AWS_REGION" --arg image "$IMAGE" --arg secret "$SECRET_ARN" \
    --arg cluster "$CLUSTER" --arg subnet "$SUBNET" --arg group "$GROUP" --arg count "$SHARDS" \
    --arg i "$2" "$fill | $3" "$here/$1"
}

render execution-role-secret.json 0 . > "$out/execution-role-secret.json"
i=0
while [ "$i" -lt "$SHARDS" ]; do
  render task-definition.json "$i" '.containerDefinitions[0].environment |= map(
      if .name == "RELAY_SHARD_IDS" then .value = $i
      elif .name == "RELAY_SHARD_COUNT" then .value = $count else . end)' > "$out/task-$i.json"
  render service.json "$i" '.tags |= map(if .key == "kioku:shard" then .value = $i else . end)' \
    > "$out/service-$i.json"
  i=$((i + 1))
done
