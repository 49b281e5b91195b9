# oyster — the two commands a newcomer needs are `make demo` and `make test`.
CARGO ?= cargo

.PHONY: build test test-fresh lint check-macos demo bench clean install uninstall

build:
	$(CARGO) build --workspace --locked

## Format check, clippy with warnings as errors, then every test in the workspace.
## The integration tests mostly wait (a Host starting and settling, launchd's drain, a lock
## held by another run), not compute, so they run TEST_THREADS at a time, more than the cores.
TEST_THREADS ?= 8
test:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	RUST_TEST_THREADS=$(TEST_THREADS) $(CARGO) test --workspace --locked

## `make test` as a newcomer's machine runs it: a clone of HEAD in a temp dir, an empty
## CARGO_HOME (no crate cached), no earlier build. See scripts/test-fresh.sh.
test-fresh:
	bash scripts/test-fresh.sh

lint:
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

## The macOS code and every test type-checked here: clippy --all-targets -D warnings for
## aarch64- and x86_64-apple-darwin, with rustup's Apple std when both targets are added, else
## Debian's rustc-web toolchain and -Zbuild-std (cached in ~/.cache; target/apple).
## Skips with the reason only when neither can be had. See scripts/check-macos.sh.
check-macos:
	bash scripts/check-macos.sh

## Benchmarks (release build); the table is printed and written to target/bench/latest.md.
bench:
	$(CARGO) build --release --workspace --locked
	@[ -x /usr/bin/time ] || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || \
		apt-get install -y -qq time >/dev/null 2>&1 || echo "note: GNU time missing; no memory column"
	python3 scripts/bench.py

clean:
	$(CARGO) clean

## The main job, in a throw-away HOME, printed step by step.
demo: build
	bash scripts/demo.sh

## The man pages `oyster man --dir` writes: oyster(1) and one per subcommand (a test keeps this
## list equal to what the binary writes, so uninstall removes exactly those).
MANPAGES = oyster oyster-setup oyster-status oyster-start oyster-stop oyster-restart oyster-logs \
	oyster-list oyster-kill oyster-install oyster-uninstall oyster-cleanup oyster-doctor \
	oyster-providers oyster-config oyster-env oyster-agent oyster-host oyster-version oyster-open oyster-qr \
	oyster-mdm oyster-inventory \
	oyster-completions oyster-man

## Install the binary, shell completions and man pages: make install PREFIX=/usr/local [DESTDIR=…]
PREFIX ?= /usr/local
BINDIR = $(DESTDIR)$(PREFIX)/bin
SHAREDIR = $(DESTDIR)$(PREFIX)/share
install:
	$(CARGO) build --release --locked -p oyster
	install -d $(BINDIR) $(SHAREDIR)/man/man1 $(SHAREDIR)/bash-completion/completions \
		$(SHAREDIR)/zsh/site-functions $(SHAREDIR)/fish/vendor_completions.d
	install -m 0755 target/release/oyster $(BINDIR)/oyster
	target/release/oyster man --dir $(SHAREDIR)/man/man1
	target/release/oyster completions bash > $(SHAREDIR)/bash-completion/completions/oyster
	target/release/oyster completions zsh > $(SHAREDIR)/zsh/site-functions/_oyster
	target/release/oyster completions fish > $(SHAREDIR)/fish/vendor_completions.d/oyster.fish

uninstall:
	rm -f $(BINDIR)/oyster $(MANPAGES:%=$(SHAREDIR)/man/man1/%.1) \
		$(SHAREDIR)/bash-completion/completions/oyster $(SHAREDIR)/zsh/site-functions/_oyster \
		$(SHAREDIR)/fish/vendor_completions.d/oyster.fish

## Release archive: dist/oyster-<version>.tar.gz (the source of DIST_REF, HEAD by default, as
## `git archive` gives it, so the same commit always gives the same bytes) and
## dist/oyster-<version>.tar.gz.sha256. For a release, `make release-formula` (below).
OYSTER_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
DISTDIR ?= dist
DIST_REF ?= HEAD
DIST_TAR = oyster-$(OYSTER_VERSION).tar.gz
.PHONY: dist release-formula
dist:
	@[ "$(DIST_REF)" != HEAD ] || git diff --quiet HEAD -- || echo "note: uncommitted changes are not in the archive (it is HEAD)"
	mkdir -p $(DISTDIR)
	git archive --format=tar.gz --prefix=oyster-$(OYSTER_VERSION)/ -o $(DISTDIR)/$(DIST_TAR) $(DIST_REF)
	cd $(DISTDIR) && { sha256sum $(DIST_TAR) 2>/dev/null || shasum -a 256 $(DIST_TAR); } > $(DIST_TAR).sha256
	@echo "$(DISTDIR)/$(DIST_TAR): the source of $(DIST_REF), sha256 $$(cut -d ' ' -f 1 $(DISTDIR)/$(DIST_TAR).sha256)"

## The release's formula: the archive of the tag v<version> (which must exist, on a commit whose
## Cargo.toml has that version), its url and sha256 written into Formula/oyster.rb. Upload the
## archive to the v<version> release (README, "Cutting a release").
release-formula:
	@git rev-parse -q --verify "refs/tags/v$(OYSTER_VERSION)" >/dev/null || \
		{ echo "release-formula: there is no tag v$(OYSTER_VERSION); tag the release commit first (git tag v$(OYSTER_VERSION))" >&2; exit 1; }
	@tagged="$$(git show "v$(OYSTER_VERSION):Cargo.toml" | sed -n 's/^version = "\(.*\)"/\1/p' | head -n 1)"; \
	[ "$$tagged" = "$(OYSTER_VERSION)" ] || \
		{ echo "release-formula: the tag v$(OYSTER_VERSION) is a commit whose Cargo.toml has version \"$$tagged\", so its archive would build another version; move the tag to the commit that sets version = \"$(OYSTER_VERSION)\" (git tag -d v$(OYSTER_VERSION), then tag that commit)" >&2; exit 1; }
	$(MAKE) -s dist DIST_REF=v$(OYSTER_VERSION) DISTDIR=$(DISTDIR)
	bash scripts/release-formula.sh $(DISTDIR)/$(DIST_TAR) $(OYSTER_VERSION)
