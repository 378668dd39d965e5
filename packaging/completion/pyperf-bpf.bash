# bash completion for pyperf-bpf: its commands, and each command's options
# read from that command's own --help (one source: they cannot drift apart),
# with the values some of them take.
_pyperf_bpf()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local cmd=record i opts

	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--)	# a program to profile, and its arguments
			COMPREPLY=($(compgen -c -- "$cur") $(compgen -f -- "$cur"))
			return ;;
		record|dump|top|leaks|daemon|diff)
			[ "$i" -eq 1 ] && cmd=${COMP_WORDS[i]} ;;
		esac
	done
	if [ "$COMP_CWORD" -eq 1 ] && [[ $cur != -* ]]; then
		COMPREPLY=($(compgen -W "record dump top leaks daemon diff" -- "$cur"))
		return
	fi
	case $prev in
	-o|--output|--stats-json|--config|--log|--dir|--spool|-c)
		COMPREPLY=($(compgen -f -- "$cur")); return ;;
	-f|--format)
		COMPREPLY=($(compgen -W "report folded svg pprof speedscope otlp timeline" -- "$cur")); return ;;
	--mode)
		COMPREPLY=($(compgen -W "cpu wall offcpu faults alloc" -- "$cur")); return ;;
	--events)
		COMPREPLY=($(compgen -W "gc import gc,import" -- "$cur")); return ;;
	-p|--pid)
		COMPREPLY=($(compgen -W "$(pgrep -d ' ' -f python 2>/dev/null)" -- "$cur")); return ;;
	esac
	if [[ $cur == -* ]]; then
		opts=$("${COMP_WORDS[0]}" "$cmd" --help 2>/dev/null |
		       grep -oE -- '(^|[ ,])--?[a-zA-Z][-a-zA-Z]*' | tr -d ' ,' | sort -u)
		COMPREPLY=($(compgen -W "$opts --" -- "$cur"))
	fi
}
complete -F _pyperf_bpf pyperf-bpf
