# systemd/: units for a management host (kanna.target pulls in every daemon),
# their hardening drop-in, sysusers.d and tmpfiles.d entries. The
# directories come from systemd's pkg-config file (configure
# --with-systemdsystemunitdir= and friends override them; distcheck points
# them into its prefix).
systemdunit_DATA = systemd/kanna.target systemd/kanna-watcher.service systemd/kanna-scheduler@.service \
	systemd/kanna-launcher.service systemd/kanna-reaper.service
systemddropindir = $(systemdunitdir)/kanna-.service.d
systemddropin_DATA = systemd/hardening.conf
# Installed as kanna.conf in each directory (install-data-hook below).
sysusers_DATA =
tmpfiles_DATA =
CLEANFILES += systemd/kanna-watcher.service systemd/kanna-scheduler@.service systemd/kanna-launcher.service \
	systemd/kanna-reaper.service
EXTRA_DIST += systemd/kanna.target systemd/hardening.conf systemd/kanna.sysusers systemd/kanna.tmpfiles \
	systemd/kanna.yaml systemd/kanna-watcher.service.in systemd/kanna-scheduler@.service.in \
	systemd/kanna-launcher.service.in systemd/kanna-reaper.service.in

# The example configuration, as /etc/kanna/kanna.yaml with --sysconfdir=/etc
# (the daemons read /etc/kanna/kanna.yaml).
kannaconfdir = $(sysconfdir)/kanna
kannaconf_DATA = systemd/kanna.yaml

install-data-hook: install-systemd-extras
uninstall-hook: uninstall-systemd-extras
install-systemd-extras:
	$(MKDIR_P) '$(DESTDIR)$(sysusersdir)' '$(DESTDIR)$(tmpfilesdir)'
	$(INSTALL_DATA) $(srcdir)/systemd/kanna.sysusers '$(DESTDIR)$(sysusersdir)/kanna.conf'
	$(INSTALL_DATA) $(srcdir)/systemd/kanna.tmpfiles '$(DESTDIR)$(tmpfilesdir)/kanna.conf'
uninstall-systemd-extras:
	rm -f '$(DESTDIR)$(sysusersdir)/kanna.conf' '$(DESTDIR)$(tmpfilesdir)/kanna.conf'
.PHONY: install-systemd-extras uninstall-systemd-extras

SYSTEMD_SUBST = $(MKDIR_P) systemd && sed -e 's|@bindir[@]|$(bindir)|g'
systemd/kanna-watcher.service: $(srcdir)/systemd/kanna-watcher.service.in Makefile
	$(AM_V_GEN)$(SYSTEMD_SUBST) $(srcdir)/systemd/kanna-watcher.service.in > $@
systemd/kanna-scheduler@.service: $(srcdir)/systemd/kanna-scheduler@.service.in Makefile
	$(AM_V_GEN)$(SYSTEMD_SUBST) $(srcdir)/systemd/kanna-scheduler@.service.in > $@
systemd/kanna-launcher.service: $(srcdir)/systemd/kanna-launcher.service.in Makefile
	$(AM_V_GEN)$(SYSTEMD_SUBST) $(srcdir)/systemd/kanna-launcher.service.in > $@
systemd/kanna-reaper.service: $(srcdir)/systemd/kanna-reaper.service.in Makefile
	$(AM_V_GEN)$(SYSTEMD_SUBST) $(srcdir)/systemd/kanna-reaper.service.in > $@

TESTS += tests/e2e/systemd-units.sh
EXTRA_DIST += tests/e2e/systemd-units.sh
TESTS += tests/e2e/systemd-syscalls.sh
EXTRA_DIST += tests/e2e/systemd-syscalls.sh
