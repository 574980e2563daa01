{{/* The chart's name. */}}
{{- define "toolpass.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name, at most 63 characters. */}}
{{- define "toolpass.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Chart name and version, for the chart label. */}}
{{- define "toolpass.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Common labels. */}}
{{- define "toolpass.labels" -}}
helm.sh/chart: {{ include "toolpass.chart" . }}
{{ include "toolpass.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels. */}}
{{- define "toolpass.selectorLabels" -}}
app.kubernetes.io/name: {{ include "toolpass.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The service account's name. */}}
{{- define "toolpass.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "toolpass.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The toolpass.yaml of the ConfigMap: .Values.config with the chart's TLS files. */}}
{{- define "toolpass.config" -}}
{{- $config := deepCopy .Values.config }}
{{- $server := default (dict) (get $config "server") }}
{{- if .Values.tls.enabled }}
{{- $_ := set $server "tls_cert_file" "/etc/toolpass/tls/tls.crt" }}
{{- $_ := set $server "tls_key_file" "/etc/toolpass/tls/tls.key" }}
{{- end }}
{{- $_ := set $config "server" $server }}
{{- if and .Values.store.url .Values.store.existingSecret }}
{{- fail "store.url and store.existingSecret: give one of them" }}
{{- end }}
{{- if .Values.store.existingSecret }}
{{- $_ := set $config "store" "env:TOOLPASS_STORE_URL" }}
{{- else if .Values.store.url }}
{{- $_ := set $config "store" .Values.store.url }}
{{- end }}
{{- toYaml $config }}
{{- end }}
