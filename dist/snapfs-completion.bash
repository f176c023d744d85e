# SPDX-License-Identifier: MIT
# bash completion for snapfs: the commands, each command's options (read from the command's
# own table, snapfs help --options CMD, so they never fall out of step), the values of the
# options that take a fixed set, files and directories where a path goes, the snapshot names
# of the mount for snapfs rm, and the scope names of the mount for the scope commands. Installed
# as PREFIX/share/bash-completion/completions/snapfs, where bash-completion loads it the first
# time snapfs is completed.

# The commands, as the command itself lists them (snapfs --help), so a command added later
# completes without this file changing; the list of this release when it cannot be run.
_snapfs_commands()
{
    local list
    list=$("$1" --help 2>/dev/null | sed -n '/^Commands:$/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
    printf '%s\n' "${list:-mount check put ls rm prune verify exec wait audit export import keygen scope grant revoke status metrics help version}"
}

# The value of --mount among the words typed so far, as arguments for snapfs ls or scope ls.
_snapfs_mount_args()
{
    local i
    for ((i = 2; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        --mount) printf '%s\n' --mount "${COMP_WORDS[i + 1]}" ;;
        --mount=*) printf '%s\n' "${COMP_WORDS[i]}" ;;
        esac
    done
}

# COMPREPLY: the scope names of the mount (snapfs scope ls), those starting with $cur.
_snapfs_scopes()
{
    local words
    words=$("$1" scope ls $(_snapfs_mount_args) 2>/dev/null | awk 'NR == 1 { next } { print $1 }')
    mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
}

_snapfs()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local snapfs=${COMP_WORDS[0]} cmd=${COMP_WORDS[1]} words
    COMPREPLY=()

    if ((COMP_CWORD == 1)); then
        mapfile -t COMPREPLY < <(compgen -W "$(_snapfs_commands "$snapfs") --help --version" -- "$cur")
        return 0
    fi
    # The values of the options that take a fixed set, a directory, a file or a value of the
    # user's own: what snapfs help --options says of each (tests/integration/test_cli_options.py
    # holds these lists to it).
    case $prev in
    --kind) words="content signature manifest" ;;
    --sort) words="name size age" ;;
    --preset) words="snapfs tmpfs" ;;
    --backend) words="auto statmount mountinfo" ;;
    --format) words="openmetrics prometheus" ;;
    --mount | --read-view | --store | --runtime-store | --view)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -d -- "$cur")
        return 0
        ;;
    --sign | --verify-key | --trust-key | --audit-log | --pid-file | --config | --output)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        return 0
        ;;
    --owner | --name | --older-than | --binding | --fd | --env | --max-* | --staging-ttl | \
        --threads | --min-bytes | --publishers | --readers | --mode | --fstype | --require | --forbid | \
        --uid | --gid | --until-pid | --as | --entry | --timeout | --group)
        return 0 # a value of the user's own
        ;;
    esac
    if [[ -n $words ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
        return 0
    fi
    if [[ $cmd == help ]]; then
        ((COMP_CWORD == 2)) && mapfile -t COMPREPLY < <(compgen -W "$(_snapfs_commands "$snapfs")" -- "$cur")
        return 0
    fi
    # The scopes snapfs scope ls shows on this mount: what --scope, scope ls|rm NAME, grant
    # NAME and revoke NAME take.
    if [[ $prev == --scope ]]; then
        _snapfs_scopes "$snapfs"
        return 0
    fi
    if [[ $cmd == scope && $COMP_CWORD == 2 && $cur != -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "create ls rm" -- "$cur")
        return 0
    fi
    if [[ $cur == -* ]]; then
        words=$("$snapfs" help --options "$cmd" 2>/dev/null | cut -d' ' -f1)
        mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
        return 0
    fi
    case $cmd in
    rm)
        # The names snapfs ls shows on this mount (every kind): what rm takes.
        words=$("$snapfs" ls --all $(_snapfs_mount_args) 2>/dev/null |
            awk 'NR == 1 { next } NF == 0 { exit } $2 != "-" { print $2 }')
        mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
        ;;
    scope)
        [[ ${COMP_WORDS[2]} == ls || ${COMP_WORDS[2]} == rm ]] && _snapfs_scopes "$snapfs"
        ;;
    grant | revoke)
        # The first operand is the scope; a value of the user's own after it.
        local i n=0
        for ((i = 2; i < COMP_CWORD; i++)); do
            case ${COMP_WORDS[i]} in
            --mount | --owner | --as) ((i++)) ;;
            -*) ;;
            *) ((n++)) ;;
            esac
        done
        ((n == 0)) && _snapfs_scopes "$snapfs"
        ;;
    put | mount | check | keygen | export | import | verify | audit)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        ;;
    esac
    return 0
}

complete -F _snapfs snapfs
