#!/usr/bin/env bash
# System tools that some tests drive for real: Prometheus (promtool, the server) and Chromium with
# ChromeDriver. Installed from Debian's packages where that is possible (root, apt-get); anywhere
# else nothing is installed and the tests that need a missing tool skip, each naming it.
set -u
need=()
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${need[*]} from Debian's packages"
  # No init system here: keep the package scripts from starting the Prometheus service.
  policy=/usr/sbin/policy-rc.d
  created=0
  if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; created=1; fi
  { apt-get -o DPkg::Lock::Timeout=300 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
      --no-install-recommends "${need[@]}" >/dev/null; } \
    || echo "could not install ${need[*]}: the tests that need them will skip and say so"
  [ "$created" = 1 ] && rm -f "$policy"
else
  echo "not root with apt-get: tests that need ${need[*]} will skip and say so"
fi
exit 0
