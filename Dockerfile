# syntax=docker/dockerfile:1
#
# jobgate: one image for both containers of the Deployment (`jobgate serve`, `jobgate reconcile`).
#
#   docker build -t ghcr.io/jobgate/jobgate:dev .
#
# Build stage: Debian bookworm's glibc matches the distroless runtime below. The registry and
# target directories are BuildKit cache mounts, so rebuilding after a source change only compiles
# jobgate.
ARG RUST_VERSION=1.95
FROM docker.io/library/rust:${RUST_VERSION}-bookworm AS build
# The context has no .git (.dockerignore): `jobgate version` gets the commit and the build date
# from these (the release workflow passes the tag's commit and its date); without them it says
# "unknown".
ARG JOBGATE_GIT_COMMIT=
ARG SOURCE_DATE_EPOCH=
ENV JOBGATE_GIT_COMMIT=${JOBGATE_GIT_COMMIT} SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH}
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --profile dist --locked --bin jobgate \
    && install -D -m 0755 target/dist/jobgate /out/jobgate

# Runtime: distroless cc (glibc, libgcc, CA certificates; no shell, no package manager), running as
# the image's "nonroot" user 65532, which deploy/base's securityContext also names.
FROM gcr.io/distroless/cc-debian12:nonroot
ARG SOURCE_URL=https://github.com/jobgate/jobgate
ARG VERSION=dev
LABEL org.opencontainers.image.source="${SOURCE_URL}" \
      org.opencontainers.image.title="jobgate" \
      org.opencontainers.image.description="Admission webhook and failure-recovery reconciler for Kubernetes batch Jobs" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/jobgate /usr/local/bin/jobgate
USER 65532:65532
# 8443 webhook (TLS), 8080 serve's admin port, 8081 reconcile's admin port.
EXPOSE 8443 8080 8081
ENTRYPOINT ["/usr/local/bin/jobgate"]
CMD ["serve"]
