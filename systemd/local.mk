# systemd/: units for a management host (kanna.target pulls in every daemon).
# Installed under $(prefix)/lib/systemd/system so `make distcheck` stays in
# its prefix; packagers point it at /lib/systemd/system.
systemdunitdir = $(prefix)/lib/systemd/system
systemdunit_DATA = systemd/kanna.target systemd/kanna-watcher.service
CLEANFILES += systemd/kanna-watcher.service
EXTRA_DIST += systemd/kanna.target systemd/kanna-watcher.service.in

systemd/kanna-watcher.service: $(srcdir)/systemd/kanna-watcher.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) systemd && sed -e 's|@bindir[@]|$(bindir)|g' $(srcdir)/systemd/kanna-watcher.service.in > $@
