# workmap's images, built statically and run as the distroless nonroot user, which the
# manifests in deploy/ expect (runAsNonRoot, runAsUser 65532, read-only root filesystem):
#   workmap-scheduler (the default target): kube-scheduler with the WorkmapGang plugin and the
#   pod-grouper (cmd/workmap-scheduler),
#     docker build -t ghcr.io/workmap/workmap-scheduler:latest .
#   workmap: the CLI (cmd/workmap), whose `serve` command deploy/serve runs in the cluster,
#     docker build --target workmap -t ghcr.io/workmap/workmap:latest .
#   workmap-webhook: the admission webhook that groups pods at creation (cmd/workmap-webhook),
#   which deploy/webhook runs,
#     docker build --target workmap-webhook -t ghcr.io/workmap/workmap-webhook:latest .
FROM golang:1.26 AS source
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .

FROM source AS build-workmap
RUN CGO_ENABLED=0 go build -trimpath -o /workmap ./cmd/workmap

FROM gcr.io/distroless/static:nonroot AS workmap
COPY --from=build-workmap /workmap /workmap
USER 65532:65532
ENTRYPOINT ["/workmap"]

FROM source AS build-webhook
RUN CGO_ENABLED=0 go build -trimpath -o /workmap-webhook ./cmd/workmap-webhook

FROM gcr.io/distroless/static:nonroot AS workmap-webhook
COPY --from=build-webhook /workmap-webhook /workmap-webhook
USER 65532:65532
ENTRYPOINT ["/workmap-webhook"]

FROM source AS build-scheduler
RUN CGO_ENABLED=0 go build -trimpath -o /workmap-scheduler ./cmd/workmap-scheduler

# Last, so that a build without --target makes this image, as it always has.
FROM gcr.io/distroless/static:nonroot AS workmap-scheduler
COPY --from=build-scheduler /workmap-scheduler /workmap-scheduler
USER 65532:65532
ENTRYPOINT ["/workmap-scheduler"]
