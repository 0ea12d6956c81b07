# The Scion controller image: `docker build -t registry.example.com/scion:v0.1.0 .`
# then `cd config/default && kustomize edit set image scion=registry.example.com/scion:v0.1.0`.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/scion ./cmd/scion

# git is needed for file:// remotes (mounted repositories); http(s)
# remotes are spoken by the binary itself.
FROM alpine:3.22
RUN apk add --no-cache git ca-certificates && adduser -D -u 65532 scion
COPY --from=build /out/scion /usr/local/bin/scion
USER 65532:65532
ENV XDG_CACHE_HOME=/var/cache
ENTRYPOINT ["/usr/local/bin/scion"]
CMD ["controller", "--leader-elect"]
