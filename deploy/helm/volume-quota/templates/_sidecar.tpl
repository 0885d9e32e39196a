{{/*
The pieces a broker pod needs for volume-quota, as named templates: this chart's StatefulSet
uses them, and so can any chart that runs Kafka itself (attach mode, kafka.enabled=false). Each
takes the volume-quota chart's root context (.Values, .Release, .Chart); a parent chart that has
volume-quota as a dependency passes one built from its values, e.g.

  {{- $vq := dict "Values" (index .Values "volume-quota") "Release" .Release "Chart" (dict "Name" "volume-quota") }}
  containers:
    - {{- include "volume-quota.sidecarContainer" $vq | nindent 6 }}

In attach mode the chart also renders them into the ConfigMap <fullname>-attach, to copy from.
*/}}

{{/* The `volume-quota sidecar` container (a mapping: put it under "- " in a containers list). */}}
{{- define "volume-quota.sidecarContainer" -}}
{{- $sidecarTlsDir := include "volume-quota.sidecarTlsDir" . -}}
{{- $offset := int .Values.sidecar.brokerIdOffset -}}
name: volume-quota
image: {{ include "volume-quota.sidecarImage" . }}
imagePullPolicy: {{ .Values.sidecar.image.pullPolicy }}
{{- if eq .Values.sidecar.brokerIdSource "hostname" }}
# The broker id is the ordinal at the end of the pod's host name (<name>-<n>){{ if $offset }} plus {{ $offset }}{{ end }}.
command:
  - /bin/sh
  - -c
  {{- if $offset }}
  - VOLUME_QUOTA_BROKER_ID="$((${HOSTNAME##*-} + {{ $offset }}))" exec volume-quota sidecar
  {{- else }}
  - VOLUME_QUOTA_BROKER_ID="${HOSTNAME##*-}" exec volume-quota sidecar
  {{- end }}
{{- else if and (eq .Values.sidecar.brokerIdSource "podIndexLabel") $offset }}
# The broker id is the pod's StatefulSet ordinal plus {{ $offset }} (the broker's first id).
command:
  - /bin/sh
  - -c
  - VOLUME_QUOTA_BROKER_ID="$((POD_INDEX + {{ $offset }}))" exec volume-quota sidecar
{{- else }}
command:
  - volume-quota
  - sidecar
{{- end }}
env:
  {{- if eq .Values.sidecar.brokerIdSource "podIndexLabel" }}
  {{- if $offset }}
  - name: POD_INDEX
  {{- else }}
  # The StatefulSet ordinal, which is also the broker's node.id.
  - name: VOLUME_QUOTA_BROKER_ID
  {{- end }}
    valueFrom:
      fieldRef:
        fieldPath: metadata.labels['apps.kubernetes.io/pod-index']
  {{- end }}
  {{- /* metaProperties: no id here; the sidecar reads node.id from meta.properties in its log dirs,
         waiting for the broker to format them (it may start first). */}}
  {{- if eq .Values.sidecar.brokerIdSource "metaProperties" }}
  - name: VOLUME_QUOTA_WAIT_FOR_LOG_DIRS
    value: "10m"
  {{- end }}
  - name: VOLUME_QUOTA_LOG_DIRS
    value: {{ include "volume-quota.volumeMountPaths" . | quote }}
  - name: VOLUME_QUOTA_BOOTSTRAP_SERVERS
    value: {{ include "volume-quota.bootstrapServers" . | quote }}
  - name: VOLUME_QUOTA_TLS_CA_FILE
    value: {{ $sidecarTlsDir }}/{{ .Values.sidecar.tls.caKey }}
  - name: VOLUME_QUOTA_TLS_CERT_FILE
    value: {{ $sidecarTlsDir }}/{{ .Values.sidecar.tls.certKey }}
  - name: VOLUME_QUOTA_TLS_KEY_FILE
    value: {{ $sidecarTlsDir }}/{{ .Values.sidecar.tls.keyKey }}
  # Whose signature makes a broker's snapshot count: that broker's own identity.
  {{- include "volume-quota.signatureEnv" . | nindent 2 }}
  - name: VOLUME_QUOTA_TOPIC
    value: {{ .Values.sidecar.topic | quote }}
  - name: VOLUME_QUOTA_CONSUMER_GROUP
    value: {{ .Values.sidecar.consumerGroup | quote }}
  - name: VOLUME_QUOTA_SOFT_LIMIT
    value: {{ .Values.sidecar.softLimit | quote }}
  - name: VOLUME_QUOTA_HARD_LIMIT
    value: {{ .Values.sidecar.hardLimit | quote }}
  {{- with include "volume-quota.volumeLimits" . }}
  - name: VOLUME_QUOTA_VOLUME_LIMITS
    value: {{ . | quote }}
  {{- end }}
  - name: VOLUME_QUOTA_DECISION_FILE
    value: {{ include "volume-quota.decisionFile" . }}
  - name: VOLUME_QUOTA_STALE_AFTER
    value: {{ .Values.sidecar.staleAfter | quote }}
  - name: VOLUME_QUOTA_ON_MISSING
    value: {{ .Values.sidecar.onMissing | quote }}
  - name: VOLUME_QUOTA_METRICS_PORT
    value: {{ .Values.sidecar.metricsPort | quote }}
  - name: VOLUME_QUOTA_LOG_LEVEL
    value: {{ .Values.sidecar.logLevel | quote }}
  {{- with .Values.sidecar.extraEnv }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
ports:
  - name: metrics
    containerPort: {{ .Values.sidecar.metricsPort }}
# Liveness only (/healthz: the volumes were measured recently). No readiness probe: a sidecar
# that cannot reach Kafka must not make its broker unready, which would hold every drain back
# at the PodDisruptionBudget. /readyz is for people, alerts and `helm test`.
livenessProbe:
  httpGet:
    path: /healthz
    port: metrics
  {{- toYaml .Values.sidecar.livenessProbe | nindent 2 }}
resources:
  {{- toYaml .Values.sidecar.resources | nindent 2 }}
securityContext:
  {{- toYaml .Values.sidecar.securityContext | nindent 2 }}
volumeMounts:
  {{- range (include "volume-quota.brokerVolumes" . | fromJsonArray) }}
  - name: {{ .name }}
    mountPath: {{ .mountPath }}
    readOnly: true
  {{- end }}
  - name: sidecar-tls
    mountPath: {{ $sidecarTlsDir }}
    readOnly: true
  - name: decision
    mountPath: {{ include "volume-quota.decisionDir" . }}
  - name: sidecar-tmp
    mountPath: /tmp
{{- end -}}

{{/* The init container that copies the quota callback jar to the broker-plugin volume. */}}
{{- define "volume-quota.pluginInitContainer" -}}
name: install-broker-plugin
image: {{ include "volume-quota.sidecarImage" . }}
imagePullPolicy: {{ .Values.sidecar.image.pullPolicy }}
command:
  - cp
  - {{ .Values.sidecar.image.pluginJarPath }}
  - {{ include "volume-quota.pluginJar" . }}
securityContext:
  {{- toYaml .Values.sidecar.securityContext | nindent 2 }}
resources:
  {{- toYaml .Values.sidecar.resources | nindent 2 }}
volumeMounts:
  - name: broker-plugin
    mountPath: {{ include "volume-quota.pluginDir" . }}
{{- end -}}

{{/*
The init container that copies the Prometheus JMX exporter agent and its configuration
(kafka.metrics) next to the callback jar, on the broker-plugin volume.
*/}}
{{- define "volume-quota.metricsAgentInitContainer" -}}
name: install-metrics-agent
image: {{ include "volume-quota.sidecarImage" . }}
imagePullPolicy: {{ .Values.sidecar.image.pullPolicy }}
command:
  - cp
  - {{ .Values.sidecar.image.metricsAgentPath }}
  - {{ .Values.sidecar.image.metricsConfigDir }}/{{ include "volume-quota.metricsConfigFile" . }}
  - {{ include "volume-quota.pluginDir" . }}/
securityContext:
  {{- toYaml .Values.sidecar.securityContext | nindent 2 }}
resources:
  {{- toYaml .Values.sidecar.resources | nindent 2 }}
volumeMounts:
  - name: broker-plugin
    mountPath: {{ include "volume-quota.pluginDir" . }}
{{- end -}}

{{/* The pod volumes the sidecar and the callback need (a list). */}}
{{- define "volume-quota.sidecarPodVolumes" -}}
{{- if and .Values.quota.enabled (not (include "volume-quota.brokerImageHasPlugin" .)) }}
- name: broker-plugin
  emptyDir:
    sizeLimit: 16Mi
{{- end }}
# Written by the sidecar (temp file + rename), read by the broker's quota callback.
- name: decision
  emptyDir:
    medium: Memory
    sizeLimit: 1Mi
# The sidecar's client certificate: its own pod's (perBroker) or the shared Secret.
- name: sidecar-tls
  {{- include "volume-quota.sidecarTlsVolume" (dict "root" . "fsGroup" (.Values.sidecar.securityContext.runAsGroup | default 10001)) | nindent 2 }}
- name: sidecar-tmp
  emptyDir:
    medium: Memory
    sizeLimit: 16Mi
{{- end -}}

{{/* The broker container's mounts of those volumes (a list). */}}
{{- define "volume-quota.brokerMounts" -}}
{{- if .Values.quota.enabled }}
{{- if not (include "volume-quota.brokerImageHasPlugin" .) }}
- name: broker-plugin
  mountPath: {{ include "volume-quota.pluginDir" . }}
  readOnly: true
{{- end }}
- name: decision
  mountPath: {{ include "volume-quota.decisionDir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* server.properties lines that load the quota callback. */}}
{{- define "volume-quota.callbackProperties" -}}
# volume-quota: the cluster-wide decision becomes every producer's PRODUCE quota.
client.quota.callback.class=io.volumequota.broker.VolumeQuotaCallback
volume.quota.decision.path={{ include "volume-quota.decisionFile" . }}
volume.quota.produce.base.bytes.per.second={{ int64 .Values.quota.produceBaseBytesPerSecond }}
volume.quota.pause.bytes.per.second={{ int64 .Values.quota.pauseBytesPerSecond }}
volume.quota.pause.principal.max.bytes.per.second={{ int64 .Values.quota.pausePrincipalMaxBytesPerSecond }}
volume.quota.pause.broker.max.bytes.per.second={{ int64 .Values.quota.pauseBrokerMaxBytesPerSecond }}
volume.quota.max.step.down.ratio={{ .Values.quota.maxStepDownRatio }}
volume.quota.reload.interval.ms={{ int64 .Values.quota.reloadIntervalMs }}
volume.quota.excluded.principals={{ include "volume-quota.excludedPrincipals" . }}
volume.quota.on.missing={{ .Values.quota.onMissing }}
{{- end -}}
