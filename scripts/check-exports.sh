#!/usr/bin/env bash
# Checks that a built or installed libbaton exports the public API only (docs/abi.md).
#
# Lists the dynamic symbols the library defines (nm -D --defined-only) and accepts each one that
#   - is a C function baton_* declared in the public headers (baton/baton.h, baton_vulkan.h), or
#   - demangles to baton::<Name>[::<member>](...), where every name is declared in the public
#     headers (a handle class and its member functions, a free function), possibly as its
#     "typeinfo for" / "vtable for"; no template in the name.
# Anything else fails the check and is listed with the reason: the internal namespaces
# (baton::core, baton::stream, baton::cuda, baton::hip, baton::interop, ...), anonymous
# namespaces, template instantiations (std::, baton::core::Ref<...>), names the headers do not
# declare. The public headers are those next to this script (api/include/baton), or --headers.
# Exit status: 0 all public, 1 something is not, 2 usage or tool errors.
#
# usage: scripts/check-exports.sh [--headers DIR] [--list] LIBRARY
#   LIBRARY  libbaton.so.<version> (or a link to it), built (meson test 'exports') or installed
#            (tests/consumers/run.sh checks the installed one against the installed headers)
#   DIR      the directory holding baton/*.h and baton/*.hpp files to check against (default:
#            api/include/baton of this checkout)
#   --list   also print every exported symbol, demangled and sorted (to compare two releases:
#            docs/abi.md, "Checking before a release")
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
headers="$here/../api/include/baton"
list=0
usage() {
  sed -n 's/^# usage: /usage: /p' "${BASH_SOURCE[0]}" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --headers) [ $# -ge 2 ] || usage; headers="$2"; shift 2 ;;
    --list) list=1; shift ;;
    -h|--help) usage ;;
    -*) echo "check-exports: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || usage
lib="$1"
[ -f "$lib" ] || { echo "check-exports: no such library: $lib" >&2; exit 2; }
[ -d "$headers" ] || { echo "check-exports: no such directory: $headers" >&2; exit 2; }
headers="$(cd "$headers" && pwd)"
for tool in nm c++filt awk; do
  command -v "$tool" >/dev/null ||
    { echo "check-exports: $tool not found (Debian: binutils, gawk or mawk)" >&2; exit 2; }
done
shopt -s nullglob
header_files=("$headers"/*.h "$headers"/*.hpp)
[ ${#header_files[@]} -gt 0 ] ||
  { echo "check-exports: no headers in $headers" >&2; exit 2; }

# The identifiers the public headers declare or use outside comments (a name of the library's
# that appears in no header's code is not public).
tokens="$(mktemp)"
mangled="$(mktemp)"
symbols="$(mktemp)"
classified="$(mktemp)"
trap 'rm -f "$tokens" "$mangled" "$symbols" "$classified"' EXIT
awk '
  {
    line = $0
    out = ""
    while (line != "") {
      if (inblock) {
        end = index(line, "*/")
        if (end == 0) { line = ""; break }
        line = substr(line, end + 2)
        inblock = 0
        continue
      }
      b = index(line, "/*")
      s = index(line, "//")
      if (s > 0 && (b == 0 || s < b)) { out = out " " substr(line, 1, s - 1); line = ""; break }
      if (b > 0) {
        out = out " " substr(line, 1, b - 1)
        line = substr(line, b + 2)
        inblock = 1
        continue
      }
      out = out " " line
      line = ""
    }
    n = split(out, words, /[^A-Za-z0-9_]+/)
    for (i = 1; i <= n; i++) if (words[i] ~ /^[A-Za-z_]/) print words[i]
  }
' "${header_files[@]}" | sort -u >"$tokens"

# "mangled<TAB>demangled", one line per defined dynamic symbol (version suffixes dropped; a
# symbol listed twice, under two versions, counts once).
nm -D --defined-only "$lib" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u >"$mangled"
# shellcheck disable=SC2094  # both only read $mangled
c++filt <"$mangled" | paste "$mangled" - >"$symbols"
if [ ! -s "$symbols" ]; then
  echo "check-exports: $lib defines no dynamic symbols (is it libbaton?)" >&2
  exit 1
fi

# Classify: "ok<TAB>c" or "ok<TAB>cpp", or "bad<TAB><reason>", then the demangled name.
awk -F '\t' -v tokens="$tokens" '
  BEGIN {
    while ((getline t < tokens) > 0) declared[t] = 1
    split("core stream cuda hip interop host detail", internal, " ")
    special = "^(typeinfo name for|typeinfo for|vtable for|VTT for|construction vtable for|" \
      "non-virtual thunk to|virtual thunk to|guard variable for|TLS init function for|" \
      "TLS wrapper function for) "
    for (i in internal) isInternal[internal[i]] = 1
  }
  # "" when the symbol is public, else why not.
  function reason(mangled, name,    qualified, paren, n, i, p, part) {
    if (mangled == name) {  # not a C++ symbol
      if (name !~ /^baton_[a-z0-9_]+$/) return "not a baton_* C function"
      if (!(name in declared)) return "not declared in the public headers"
      return ""
    }
    # "typeinfo for baton::X" and the like are public when X is.
    sub(special, "", name)
    if (index(name, "(anonymous namespace)")) return "anonymous namespace"
    if (name !~ /^baton::/) return "outside namespace baton"
    qualified = name
    paren = index(qualified, "(")
    if (paren > 0) qualified = substr(qualified, 1, paren - 1)
    gsub(/\[abi:[^]]*\]/, "", qualified)  # e.g. [abi:cxx11] of std::string results
    n = split(substr(qualified, 8), part, "::")
    if (n >= 1 && (part[1] in isInternal)) return "internal namespace baton::" part[1]
    for (i = 1; i <= n; i++) {
      p = part[i]
      sub(/^~/, "", p)  # a destructor
      if (p ~ /^operator/) p = "operator"
      else if (index(p, "<")) return "template instantiation"
      if (p == "" || !(p in declared))
        return "\"" part[i] "\" is not declared in the public headers"
    }
    return ""
  }
  {
    r = reason($1, $2)
    if (r != "") printf "bad\t%s\t%s\n", r, $2
    else printf "ok\t%s\t%s\n", ($1 == $2 ? "c" : "cpp"), $2
  }
' "$symbols" >"$classified"

if [ "$list" -eq 1 ]; then
  awk -F '\t' '{ print ($1 == "ok" ? "public   " : "INTERNAL ") $3 }' "$classified" | sort -k2
fi
total=$(wc -l <"$classified")
c=$(awk -F '\t' '$1 == "ok" && $2 == "c"' "$classified" | wc -l)
cpp=$(awk -F '\t' '$1 == "ok" && $2 == "cpp"' "$classified" | wc -l)
badcount=$(awk -F '\t' '$1 == "bad"' "$classified" | wc -l)
if [ "$badcount" -ne 0 ]; then
  echo "check-exports: $lib exports $badcount of its $total symbols outside the public API:"
  awk -F '\t' '$1 == "bad" { printf "  %s    [%s]\n", $3, $2 }' "$classified" | sort
  echo "check-exports: FAILED (mark public declarations BATON_API; keep the rest hidden," \
    "see docs/abi.md)"
  exit 1
fi
echo "check-exports: $lib: $total exported symbols checked ($c C functions, $cpp C++ symbols)," \
  "all public API (headers: $headers)"
