# systemd units and /etc/petrel (filled in below)
