# amem_open QUERY...: search the vault and open the best hit in $EDITOR (default vi).
# Source this file from ~/.bashrc or ~/.zshrc. Needs jq.
amem_open() {
    local id root
    id=$(amem search --limit 1 "$@" | jq -r '.hits[0].id // empty') || return
    if [ -z "$id" ]; then
        echo "amem_open: no note matches: $*" >&2
        return 1
    fi
    root=$(amem info | jq -r .vaultRoot) || return
    # Through sh, so that an EDITOR with arguments ("code -w") works in zsh too.
    sh -c "${EDITOR:-vi} \"\$1\"" amem_open "$root/$id"
}
