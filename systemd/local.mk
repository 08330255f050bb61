# systemd/: units for a management host (kanna.target pulls in every daemon).
# Installed under $(prefix)/lib/systemd/system so `make distcheck` stays in
# its prefix; packagers point it at /lib/systemd/system.
systemdunitdir = $(prefix)/lib/systemd/system
systemdunit_DATA = systemd/kanna.target systemd/kanna-watcher.service systemd/kanna-scheduler@.service \
	systemd/kanna-launcher.service systemd/kanna-reaper.service
CLEANFILES += systemd/kanna-watcher.service systemd/kanna-scheduler@.service systemd/kanna-launcher.service \
	systemd/kanna-reaper.service
EXTRA_DIST += systemd/kanna.target systemd/kanna-watcher.service.in systemd/kanna-scheduler@.service.in \
	systemd/kanna-launcher.service.in systemd/kanna-reaper.service.in

SYSTEMD_SUBST = $(MKDIR_P) systemd && sed -e 's|@bindir[@]|$(bindir)|g'
systemd/kanna-watcher.service: $(srcdir)/systemd/kanna-watcher.service.in Makefile
	$(AM_V_GEN)$(SYSTEMD_SUBST) $(srcdir)/systemd/kanna-watcher.service.in > $@
systemd/kanna-scheduler@.service: $(srcdir)/systemd/kanna-scheduler@.service.in Makefile
	$(AM_V_GEN)$(SYSTEMD_SUBST) $(srcdir)/systemd/kanna-scheduler@.service.in > $@
systemd/kanna-launcher.service: $(srcdir)/systemd/kanna-launcher.service.in Makefile
	$(AM_V_GEN)$(SYSTEMD_SUBST) $(srcdir)/systemd/kanna-launcher.service.in > $@
systemd/kanna-reaper.service: $(srcdir)/systemd/kanna-reaper.service.in Makefile
	$(AM_V_GEN)$(SYSTEMD_SUBST) $(srcdir)/systemd/kanna-reaper.service.in > $@
