# syntax=docker/dockerfile:1
# The agent-ledger image, published as ghcr.io/agent-ledger/agent-ledger:VERSION:
#
#   docker build -t ghcr.io/agent-ledger/agent-ledger:0.1.0 .
#   docker run --rm -v "$PWD:/work" -w /work ghcr.io/agent-ledger/agent-ledger:0.1.0 check --run ID --base REV
#
# It runs as an unprivileged user (uid 10001) with git and the CA roots.
# The replay and its test-command sandbox make user, mount, PID and network
# namespaces and mount a fresh /proc, which Docker's default seccomp and
# AppArmor profiles and its masked /proc refuse: run it with `--privileged`,
# or see host/ci/README.md ("When the sandbox cannot be made") for narrower
# options. The checkout must belong to uid 10001 (git refuses a repository
# another user owns); `--user "$(id -u):$(id -g)"` runs as its owner instead.

# The builder: the full image has git, so `agent-ledger --version` names the
# commit it was built from (.git is in the build context). The built-in
# property components ship prebuilt in host/builtins, so no wasm32 target is
# needed; RUSTUP_TOOLCHAIN keeps rustup from installing what
# rust-toolchain.toml lists for plugin development (the wasm32-wasip2
# target, clippy, rustfmt).
FROM rust:1.95-trixie AS builder
ENV RUSTUP_TOOLCHAIN=1.95.0 \
    CARGO_TERM_COLOR=never
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --locked --release -p agent-ledger --bin agent-ledger \
    && install -D -m 0755 target/release/agent-ledger /out/agent-ledger \
    && /out/agent-ledger --version

FROM debian:trixie-slim
# git: every command reads the repository through it. ca-certificates: live
# capture's HTTPS (the binary carries its own roots; git and test commands
# use these). Versions are not pinned: Debian drops a superseded version
# from its archive at the next security update, so a pin would break this
# build then; the release's base image tag decides what ships.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates git \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 --user-group agent-ledger
COPY --from=builder /out/agent-ledger /usr/local/bin/agent-ledger
USER 10001:10001
WORKDIR /home/agent-ledger
ENTRYPOINT ["agent-ledger"]
CMD ["--help"]
