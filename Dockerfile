# Scion's image, for those who build with a daemon:
#   docker build -t registry.example.com/scion:v0.1.0 --build-arg VERSION=v0.1.0 .
# `make image REGISTRY=registry.example.com` builds the same image without
# a daemon or a base image (docs/install.md). Both put the same root
# filesystem (go run ./hack/image rootfs) onto scratch with the same
# configuration; TestDockerfile_sameLayout (internal/image) keeps the
# lines below equal to what make image writes.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w -X github.com/scion-dev/scion/internal/version.Version=${VERSION}" -o /out/scion ./cmd/scion \
 && go run ./hack/image rootfs --binary /out/scion /rootfs

# No shell and no git binary: Scion speaks git (and OCI) itself.
FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
ENV PATH=/usr/local/bin XDG_CACHE_HOME=/var/cache HOME=/home/scion
WORKDIR /
ENTRYPOINT ["/usr/local/bin/scion"]
CMD ["controller", "--leader-elect"]
