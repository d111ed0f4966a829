{{/* The chart's name, at most 63 characters. */}}
{{- define "flotilla.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the release name when it already holds the chart's name. */}}
{{- define "flotilla.fullname" -}}
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

{{- define "flotilla.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "flotilla.selectorLabels" -}}
app.kubernetes.io/name: {{ include "flotilla.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "flotilla.labels" -}}
helm.sh/chart: {{ include "flotilla.chart" . }}
{{ include "flotilla.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "flotilla.serviceAccountName" -}}
{{- default (include "flotilla.fullname" .) .Values.serviceAccount.name }}
{{- end }}

{{/* The Secret holding the serving pair: the given one, or the one this chart makes. */}}
{{- define "flotilla.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "flotilla.fullname" .)) .Values.tls.secretName }}
{{- end }}

{{/* Flotilla talks to the hub it runs in: to read its Fleet, or to authenticate the hub's callers. */}}
{{- define "flotilla.usesHub" -}}
{{- if or (eq .Values.fleet.source "hub") .Values.aggregation.enabled }}true{{ end }}
{{- end }}

{{/* Pods run here unless the Service points at a flotilla elsewhere (service.externalName). */}}
{{- define "flotilla.runsPods" -}}
{{- if not .Values.service.externalName }}true{{ end }}
{{- end }}

{{- define "flotilla.validate" -}}
{{- if not (has .Values.fleet.source (list "configMap" "hub")) }}
{{- fail (printf "fleet.source must be configMap or hub, not %q" .Values.fleet.source) }}
{{- end }}
{{- if and (eq .Values.fleet.source "hub") (not .Values.fleet.name) }}
{{- fail "fleet.name: the Fleet object to read (fleet.source=hub)" }}
{{- end }}
{{- if and (eq .Values.fleet.source "configMap") (not .Values.fleet.config) }}
{{- fail "fleet.config: the fleet.yaml text (fleet.source=configMap)" }}
{{- end }}
{{- if and .Values.aggregation.enabled .Values.tls.secretName (not .Values.tls.caBundle) (not .Values.aggregation.insecureSkipTLSVerify) }}
{{- fail "tls.caBundle: the PEM of the CA that signed tls.secretName, for the APIService" }}
{{- end }}
{{- end }}

{{/*
The serving pair and its CA: the given Secret's (caBundle from tls.caBundle), the one an earlier
release of this chart made (kept, so an upgrade neither rolls the pods nor changes the caBundle), or
new ones for <service>.<namespace>.svc[.cluster.local]. A dict with crt, key, ca (PEM), made once
per render (kept in .Values) so that the Secret and the APIService's caBundle agree.
*/}}
{{- define "flotilla.tls" -}}
{{- if not (hasKey .Values "generatedTLS") }}
{{- $pair := dict }}
{{- if .Values.tls.secretName }}
{{- $pair = dict "ca" .Values.tls.caBundle }}
{{- else }}
{{- $secret := lookup "v1" "Secret" .Release.Namespace (include "flotilla.tlsSecretName" .) }}
{{- $data := ($secret | default dict).data | default dict }}
{{- if and (index $data "tls.crt") (index $data "tls.key") (index $data "ca.crt") }}
{{- $pair = dict "crt" (index $data "tls.crt" | b64dec) "key" (index $data "tls.key" | b64dec) "ca" (index $data "ca.crt" | b64dec) }}
{{- else }}
{{- $svc := include "flotilla.fullname" . }}
{{- $names := list (printf "%s.%s.svc" $svc .Release.Namespace) (printf "%s.%s.svc.cluster.local" $svc .Release.Namespace) }}
{{- if .Values.service.externalName }}
{{- $names = append $names .Values.service.externalName }}
{{- end }}
{{- $ca := genCA (printf "%s-ca" $svc) (int .Values.tls.validityDays) }}
{{- $cert := genSignedCert (first $names) nil $names (int .Values.tls.validityDays) $ca }}
{{- $pair = dict "crt" $cert.Cert "key" $cert.Key "ca" $ca.Cert }}
{{- end }}
{{- end }}
{{- $_ := set .Values "generatedTLS" $pair }}
{{- end }}
{{- .Values.generatedTLS | toJson }}
{{- end }}
