# bash completion for btrdedupe(8)
_btrdedupe() {
  local cur prev
  COMPREPLY=()
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  local opts="-d --dedupe -r --recursive --dry-run --exclude --min-size --dedupe-options
    --fdupes -b --blocksize --io-threads --reader --hashfile -h --human -q --quiet -v --verbose --debug
    --json --progress --help --version -B --batchsize --cpu-threads --skip-zeroes -A -x
    --subvol --exclude-subvol --all-subvols --dedupe-readonly --list-subvols --max-runtime
    --follow --settle --poll-interval --stall-limit --no-yield --max-read-rate --status"
  case $prev in
    --hashfile)
      COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
    --subvol|--exclude-subvol)
      COMPREPLY=($(compgen -d -- "$cur")); return 0 ;;
    --progress)
      COMPREPLY=($(compgen -W "auto tty json none" -- "$cur")); return 0 ;;
    --reader)
      COMPREPLY=($(compgen -W "tree paths" -- "$cur")); return 0 ;;
    --dedupe-options)
      COMPREPLY=($(compgen -W "partial nopartial same nosame only_whole_files" -- "$cur"))
      return 0 ;;
    -b|--blocksize|--min-size)
      COMPREPLY=($(compgen -W "4K 64K 128K 1M" -- "$cur")); return 0 ;;
    --settle|--poll-interval|--max-runtime)
      COMPREPLY=($(compgen -W "30s 5m 1h" -- "$cur")); return 0 ;;
    --max-read-rate)
      COMPREPLY=($(compgen -W "10M 50M 200M" -- "$cur")); return 0 ;;
    --exclude|--io-threads|--cpu-threads|-B|--batchsize|--stall-limit)
      return 0 ;;
  esac
  case $cur in
    --progress=*)
      COMPREPLY=($(compgen -W "auto tty json none" -- "${cur#--progress=}")); return 0 ;;
    --reader=*)
      COMPREPLY=($(compgen -W "tree paths" -- "${cur#--reader=}")); return 0 ;;
    --dedupe-options=*)
      local list=${cur#--dedupe-options=} done_part=""
      [[ $list == *,* ]] && done_part=${list%,*},
      COMPREPLY=($(compgen -P "$done_part" \
        -W "partial nopartial same nosame only_whole_files" -- "${list##*,}"))
      return 0 ;;
    --hashfile=*)
      COMPREPLY=($(compgen -f -- "${cur#--hashfile=}")); return 0 ;;
    -*)
      COMPREPLY=($(compgen -W "$opts" -- "$cur")); return 0 ;;
  esac
  # Paths: directories and files.
  COMPREPLY=($(compgen -f -- "$cur"))
  compopt -o filenames 2>/dev/null
  return 0
}
complete -F _btrdedupe btrdedupe
