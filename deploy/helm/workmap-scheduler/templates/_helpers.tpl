{{/*
Names and labels shared by the templates. With the release named workmap-scheduler (as the
README installs it) every object has the name deploy/kustomization.yaml gives it.
*/}}

{{- define "workmap-scheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's objects' name: the release name when it already names the chart. */}}
{{- define "workmap-scheduler.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "workmap-scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "workmap-scheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "workmap-scheduler.labels" -}}
{{ include "workmap-scheduler.selectorLabels" . }}
app.kubernetes.io/part-of: workmap
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/* The namespace of the leader-election Lease. */}}
{{- define "workmap-scheduler.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.resourceNamespace -}}
{{- end -}}

{{/*
workmap serve's objects (serve.enabled): the release's name with -serve in place of
-scheduler, so the release workmap-scheduler names them workmap-serve as deploy/serve does,
and another release's do not collide with them.
*/}}
{{- define "workmap-scheduler.serve.fullname" -}}
{{- printf "%s-serve" (include "workmap-scheduler.fullname" . | trimSuffix "-scheduler") | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The instance is serve's own name, unique per release, as in deploy/serve. */}}
{{- define "workmap-scheduler.serve.selectorLabels" -}}
app.kubernetes.io/name: workmap-serve
app.kubernetes.io/instance: {{ include "workmap-scheduler.serve.fullname" . }}
{{- end -}}

{{- define "workmap-scheduler.serve.labels" -}}
{{ include "workmap-scheduler.serve.selectorLabels" . }}
app.kubernetes.io/part-of: workmap
app.kubernetes.io/version: {{ .Values.serve.image.tag | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/*
workmap-webhook's objects (webhook.enabled): the release's name with -webhook in place of
-scheduler, so the release workmap-scheduler names them workmap-webhook as deploy/webhook does,
and another release's do not collide with them.
*/}}
{{- define "workmap-scheduler.webhook.fullname" -}}
{{- printf "%s-webhook" (include "workmap-scheduler.fullname" . | trimSuffix "-scheduler") | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The instance is the webhook's own name, unique per release, as in deploy/webhook. */}}
{{- define "workmap-scheduler.webhook.selectorLabels" -}}
app.kubernetes.io/name: workmap-webhook
app.kubernetes.io/instance: {{ include "workmap-scheduler.webhook.fullname" . }}
{{- end -}}

{{- define "workmap-scheduler.webhook.labels" -}}
{{ include "workmap-scheduler.webhook.selectorLabels" . }}
app.kubernetes.io/part-of: workmap
app.kubernetes.io/version: {{ .Values.webhook.image.tag | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/* The schedulers whose pods get the pod-group label: the chart's own by default. */}}
{{- define "workmap-scheduler.webhook.workmapSchedulers" -}}
{{- if .Values.webhook.workmapSchedulers -}}
{{- join "," .Values.webhook.workmapSchedulers -}}
{{- else -}}
{{- .Values.schedulerName -}}
{{- end -}}
{{- end -}}
