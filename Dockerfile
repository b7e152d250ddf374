# workmap-scheduler's image: kube-scheduler with the WorkmapGang plugin and the pod-grouper
# (cmd/workmap-scheduler), built statically and run as the distroless nonroot user, which the
# manifests in deploy/ expect (runAsNonRoot, runAsUser 65532, read-only root filesystem).
#   docker build -t ghcr.io/workmap/workmap-scheduler:latest .
FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /workmap-scheduler ./cmd/workmap-scheduler

FROM gcr.io/distroless/static:nonroot
COPY --from=build /workmap-scheduler /workmap-scheduler
USER 65532:65532
ENTRYPOINT ["/workmap-scheduler"]
