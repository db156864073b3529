#!/bin/sh
# agent-remember TOPIC FACT: how an agent adds what it learnt to memory without losing anyone else's
# update. Search for the note about TOPIC (or start notes/TOPIC), read it, and append FACT only if the
# note is still the version that was read (--base-version); when another writer got there first
# (exit 4, conflict), read it again and retry. Needs jq.
set -u
if [ $# -ne 2 ]; then
    echo "usage: agent-remember TOPIC FACT" >&2
    exit 2
fi
topic=$1 fact=$2
# The version of a note that does not exist yet: the SHA-1 of no bytes.
no_note=da39a3ee5e6b4b0d3255bfef95601890afd80709

id=$(amem search --limit 1 "$topic" | jq -r '.hits[0].id // empty')
[ -n "$id" ] || id="notes/$topic"

for attempt in 1 2 3 4 5; do
    note=$(amem read "$id" 2>/dev/null)
    status=$?
    case $status in
        0) version=$(printf '%s\n' "$note" | jq -r .version)
           # What was read decides what to write: a fact already there is not written twice.
           if printf '%s\n' "$note" | jq -e --arg fact "$fact" '.body | contains($fact)' >/dev/null; then
               echo "agent-remember: $id already has it" >&2
               exit 0
           fi ;;
        3) version=$no_note ;;
        *) echo "agent-remember: cannot read $id (exit $status)" >&2
           exit "$status" ;;
    esac
    amem write "$id" --append --base-version "$version" "$fact" >/dev/null
    status=$?
    case $status in
        0) echo "agent-remember: added to $id" >&2
           exit 0 ;;
        4) echo "agent-remember: $id changed since it was read (attempt $attempt); reading it again" >&2 ;;
        *) exit "$status" ;;
    esac
done
echo "agent-remember: $id kept changing; gave up after 5 attempts" >&2
exit 4
