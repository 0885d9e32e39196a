{{/* Names */}}
{{- define "volume-quota.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The StatefulSet's name; 40 characters leave room for "-headless" and pod ordinals. */}}
{{- define "volume-quota.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "volume-quota.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "volume-quota.selectorLabels" -}}
app.kubernetes.io/name: {{ include "volume-quota.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "volume-quota.labels" -}}
helm.sh/chart: {{ include "volume-quota.chart" . }}
{{ include "volume-quota.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: volume-quota
{{- end -}}

{{- define "volume-quota.headlessName" -}}
{{- printf "%s-headless" (include "volume-quota.fullname" .) -}}
{{- end -}}

{{/* <fullname>-headless.<namespace>.svc.<clusterDomain>: the domain of every pod's FQDN. */}}
{{- define "volume-quota.podDomain" -}}
{{- printf "%s.%s.svc.%s" (include "volume-quota.headlessName" .) .Release.Namespace .Values.clusterDomain -}}
{{- end -}}

{{- define "volume-quota.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "volume-quota.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "volume-quota.kafkaImage" -}}
{{- printf "%s:%s" .Values.kafka.image.repository .Values.kafka.image.tag -}}
{{- end -}}

{{- define "volume-quota.sidecarImage" -}}
{{- printf "%s:%s" .Values.sidecar.image.repository .Values.sidecar.image.tag -}}
{{- end -}}

{{/*
KRaft cluster id: kafka.clusterId, or 21 hex digits of sha256(namespace/release) + "A": hex
digits are base64url characters and "A" ends a 22-character id with zero padding bits, so
the result decodes to the 16 bytes Kafka expects, and stays the same across upgrades.
*/}}
{{- define "volume-quota.clusterId" -}}
{{- if .Values.kafka.clusterId -}}
{{- .Values.kafka.clusterId -}}
{{- else -}}
{{- printf "%sA" (sha256sum (printf "%s/%s" .Release.Namespace .Release.Name) | trunc 21) -}}
{{- end -}}
{{- end -}}

{{- define "volume-quota.brokerTlsSecret" -}}
{{- default (printf "%s-broker-tls" (include "volume-quota.fullname" .)) .Values.kafka.tls.secretName -}}
{{- end -}}

{{- define "volume-quota.sidecarTlsSecret" -}}
{{- default (printf "%s-sidecar-tls" (include "volume-quota.fullname" .)) .Values.sidecar.tls.secretName -}}
{{- end -}}

{{- define "volume-quota.historyTlsSecret" -}}
{{- default (printf "%s-history-tls" (include "volume-quota.fullname" .)) .Values.history.tls.secretName -}}
{{- end -}}

{{/*
The DNS name csi-driver writes into each sidecar's certificate (sidecar.tls.perBroker): the
pod's own FQDN, ${POD_NAME} and ${POD_NAMESPACE} expanded by csi-driver per pod.
*/}}
{{- define "volume-quota.sidecarDnsName" -}}
{{- if .Values.sidecar.tls.perBroker.dnsName -}}
{{- .Values.sidecar.tls.perBroker.dnsName -}}
{{- else if .Values.kafka.enabled -}}
{{- printf "${POD_NAME}.%s.${POD_NAMESPACE}.svc.%s" (include "volume-quota.headlessName" .) .Values.clusterDomain -}}
{{- else -}}
{{- fail "sidecar.tls.perBroker.enabled=true in attach mode needs sidecar.tls.perBroker.dnsName (e.g. ${POD_NAME}.<headless service>.${POD_NAMESPACE}.svc.cluster.local) and sidecar.signerIdentities (e.g. DNS:<broker pod prefix>-{broker}.<headless service>.<namespace>.svc.cluster.local): the chart does not know your brokers' pod names" -}}
{{- end -}}
{{- end -}}

{{/*
Who may sign for broker {broker} (VOLUME_QUOTA_SIGNER_IDENTITIES): the DNS name perBroker
issues to pod <fullname>-{broker}, whose ordinal is its node.id.
*/}}
{{- define "volume-quota.signerIdentities" -}}
{{- if .Values.sidecar.signerIdentities -}}
{{- .Values.sidecar.signerIdentities -}}
{{- else if .Values.kafka.enabled -}}
{{- printf "DNS:%s-{broker}.%s" (include "volume-quota.fullname" .) (include "volume-quota.podDomain" .) -}}
{{- end -}}
{{- end -}}

{{/*
The volume source of the sidecar certificate (a mapping), for the broker pods and the helm
test pod: sidecar.tls.volume, else one certificate per pod from csi-driver (perBroker), else
the shared Secret. Takes (dict "root" $ "fsGroup" <gid that must read the key>).
*/}}
{{- define "volume-quota.sidecarTlsVolume" -}}
{{- $root := .root -}}
{{- $tls := $root.Values.sidecar.tls -}}
{{- if $tls.volume -}}
{{- toYaml $tls.volume -}}
{{- else if $tls.perBroker.enabled -}}
csi:
  driver: csi.cert-manager.io
  readOnly: true
  volumeAttributes:
    csi.cert-manager.io/issuer-name: {{ $tls.perBroker.issuerRef.name | quote }}
    csi.cert-manager.io/issuer-kind: {{ $tls.perBroker.issuerRef.kind | quote }}
    csi.cert-manager.io/issuer-group: {{ $tls.perBroker.issuerRef.group | quote }}
    # Subject CN=<sidecar.principal> for every pod (the ACLs' principal); the DNS name is the
    # pod's own, the identity it signs its broker's snapshots with.
    csi.cert-manager.io/common-name: {{ $root.Values.sidecar.principal | quote }}
    csi.cert-manager.io/dns-names: {{ include "volume-quota.sidecarDnsName" $root | quote }}
    csi.cert-manager.io/key-usages: "client auth,digital signature,key encipherment"
    csi.cert-manager.io/key-algorithm: ECDSA
    csi.cert-manager.io/key-size: "256"
    csi.cert-manager.io/key-encoding: PKCS8
    csi.cert-manager.io/duration: {{ $tls.perBroker.duration | quote }}
    csi.cert-manager.io/renew-before: {{ $tls.perBroker.renewBefore | quote }}
    csi.cert-manager.io/certificate-file: {{ $tls.certKey | quote }}
    csi.cert-manager.io/privatekey-file: {{ $tls.keyKey | quote }}
    csi.cert-manager.io/ca-file: {{ $tls.caKey | quote }}
    csi.cert-manager.io/fs-group: {{ .fsGroup | quote }}
{{- else -}}
secret:
  secretName: {{ include "volume-quota.sidecarTlsSecret" $root }}
  defaultMode: 288  # 0440: owner and the fsGroup may read
{{- end -}}
{{- end -}}

{{/* The snapshot-signature settings of every decider (sidecar, helm test), an env list. */}}
{{- define "volume-quota.signatureEnv" -}}
- name: VOLUME_QUOTA_SNAPSHOT_SIGNATURES
  value: {{ .Values.sidecar.snapshotSignatures | quote }}
{{- with include "volume-quota.signerIdentities" . }}
- name: VOLUME_QUOTA_SIGNER_IDENTITIES
  value: {{ . | quote }}
{{- end }}
{{- with .Values.sidecar.clusterSigners }}
- name: VOLUME_QUOTA_CLUSTER_SIGNERS
  value: {{ . | quote }}
{{- end }}
- name: VOLUME_QUOTA_OVERRIDE_SIGNATURES
  value: {{ .Values.sidecar.overrideSignatures | quote }}
{{- with .Values.sidecar.overrideSigners }}
- name: VOLUME_QUOTA_OVERRIDE_SIGNERS
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{- define "volume-quota.aclJobTlsSecret" -}}
{{- default (include "volume-quota.brokerTlsSecret" .) .Values.aclJob.tls.secretName -}}
{{- end -}}

{{/* Every node's client listener by its FQDN, comma-separated; in attach mode the value. */}}
{{- define "volume-quota.bootstrapServers" -}}
{{- if .Values.sidecar.bootstrapServers -}}
{{- .Values.sidecar.bootstrapServers -}}
{{- else if not .Values.kafka.enabled -}}
{{- fail "kafka.enabled=false (attach mode) needs sidecar.bootstrapServers: the existing cluster's client listener(s), HOST:PORT,..." -}}
{{- else -}}
{{- $fullname := include "volume-quota.fullname" . -}}
{{- $domain := include "volume-quota.podDomain" . -}}
{{- $port := int .Values.kafka.ports.client -}}
{{- $servers := list -}}
{{- range $ordinal := until (int .Values.replicas) -}}
{{- $servers = append $servers (printf "%s-%d.%s:%d" $fullname $ordinal $domain $port) -}}
{{- end -}}
{{- join "," $servers -}}
{{- end -}}
{{- end -}}

{{/* Static KRaft voters: <id>@<pod FQDN>:<controller port> for every node. */}}
{{- define "volume-quota.quorumVoters" -}}
{{- $fullname := include "volume-quota.fullname" . -}}
{{- $domain := include "volume-quota.podDomain" . -}}
{{- $port := int .Values.kafka.ports.controller -}}
{{- $voters := list -}}
{{- range $ordinal := until (int .Values.replicas) -}}
{{- $voters = append $voters (printf "%d@%s-%d.%s:%d" $ordinal $fullname $ordinal $domain $port) -}}
{{- end -}}
{{- join "," $voters -}}
{{- end -}}

{{- define "volume-quota.superUsers" -}}
{{- $users := list (printf "User:%s" .Values.kafka.brokerPrincipal) -}}
{{- range .Values.kafka.superUsers -}}
{{- $users = append $users . -}}
{{- end -}}
{{- join ";" (uniq $users) -}}
{{- end -}}

{{/* The sidecar's principal first, then the operators' list; ";"-separated (DNs have commas). */}}
{{- define "volume-quota.excludedPrincipals" -}}
{{- $principals := list (printf "User:%s" .Values.sidecar.principal) -}}
{{- range .Values.quota.excludedPrincipals -}}
{{- $principals = append $principals . -}}
{{- end -}}
{{- join ";" (uniq $principals) -}}
{{- end -}}

{{/* Mount points of the broker's volumes (the data volumes, then the metadata volume). */}}
{{- define "volume-quota.dataMountPath" -}}
{{- printf "/var/lib/kafka/data-%d" . -}}
{{- end -}}

{{- define "volume-quota.metadataMountPath" -}}
/var/lib/kafka/metadata
{{- end -}}

{{/*
The broker volumes the sidecar measures, as JSON: a list of {name, mountPath, logDir}. name is
the pod volume (mounted read-only into the sidecar at mountPath), logDir the directory given to
the sidecar (VOLUME_QUOTA_LOG_DIRS). Own cluster: data-<i> and metadata; attach mode:
attach.volumes.
*/}}
{{- define "volume-quota.brokerVolumes" -}}
{{- $volumes := list -}}
{{- if .Values.kafka.enabled -}}
{{- range $index, $volume := .Values.kafka.storage.data -}}
{{- $path := include "volume-quota.dataMountPath" $index -}}
{{- $volumes = append $volumes (dict "name" (printf "data-%d" $index) "mountPath" $path "logDir" $path) -}}
{{- end -}}
{{- if .Values.kafka.storage.metadata.enabled -}}
{{- $path := include "volume-quota.metadataMountPath" . -}}
{{- $volumes = append $volumes (dict "name" "metadata" "mountPath" $path "logDir" $path) -}}
{{- end -}}
{{- else -}}
{{- range .Values.attach.volumes -}}
{{- $volumes = append $volumes (dict "name" .name "mountPath" .mountPath "logDir" (default .mountPath .logDir)) -}}
{{- end -}}
{{- end -}}
{{- toJson $volumes -}}
{{- end -}}

{{- define "volume-quota.volumeMountPaths" -}}
{{- $paths := list -}}
{{- range (include "volume-quota.brokerVolumes" . | fromJsonArray) -}}
{{- $paths = append $paths .logDir -}}
{{- end -}}
{{- join "," $paths -}}
{{- end -}}

{{/*
VOLUME_QUOTA_VOLUME_LIMITS: "LOGDIR:soft=TYPE:LEVEL,hard=TYPE:LEVEL" entries joined by ";". A
limit's volume is a broker volume's name (data-0, metadata, or an attach.volumes name), which
becomes its log dir, or an absolute path, given as is.
*/}}
{{- define "volume-quota.volumeLimits" -}}
{{- $byName := dict -}}
{{- range (include "volume-quota.brokerVolumes" . | fromJsonArray) -}}
{{- $_ := set $byName .name .logDir -}}
{{- end -}}
{{- $entries := list -}}
{{- range $index, $limit := .Values.sidecar.volumeLimits -}}
{{- $target := "" -}}
{{- if hasKey $byName $limit.volume -}}
{{- $target = get $byName $limit.volume -}}
{{- else if hasPrefix "/" $limit.volume -}}
{{- $target = $limit.volume -}}
{{- else -}}
{{- fail (printf "sidecar.volumeLimits[%d].volume %q names no broker volume (volumes: %s; or give an absolute log dir or mount point)" $index $limit.volume (keys $byName | sortAlpha | join ", ")) -}}
{{- end -}}
{{- $assignments := list -}}
{{- with $limit.soft -}}
{{- $assignments = append $assignments (printf "soft=%s" .) -}}
{{- end -}}
{{- with $limit.hard -}}
{{- $assignments = append $assignments (printf "hard=%s" .) -}}
{{- end -}}
{{- $entries = append $entries (printf "%s:%s" $target (join "," $assignments)) -}}
{{- end -}}
{{- join ";" $entries -}}
{{- end -}}

{{/* Fixed paths inside the pod. */}}
{{- define "volume-quota.decisionDir" -}}/var/run/volume-quota{{- end -}}
{{- define "volume-quota.decisionFile" -}}/var/run/volume-quota/decision.json{{- end -}}
{{- define "volume-quota.pluginDir" -}}/opt/volume-quota/broker-plugin{{- end -}}
{{- define "volume-quota.pluginJar" -}}
{{- if include "volume-quota.brokerImageHasPlugin" . -}}
{{- .Values.sidecar.image.pluginJarPath -}}
{{- else -}}
/opt/volume-quota/broker-plugin/volume-quota-broker-plugin.jar
{{- end -}}
{{- end -}}

{{/*
"true" when the broker image holds the callback jar and the metrics agent itself
(kafka.image.includesVolumeQuota, own cluster only): no init container copies them.
*/}}
{{- define "volume-quota.brokerImageHasPlugin" -}}
{{- if and .Values.kafka.enabled (.Values.kafka.image | default dict).includesVolumeQuota -}}true{{- end -}}
{{- end -}}
{{- define "volume-quota.brokerTlsDir" -}}/etc/kafka/tls{{- end -}}
{{- define "volume-quota.sidecarTlsDir" -}}/etc/volume-quota/tls{{- end -}}
{{- define "volume-quota.configTemplateDir" -}}/opt/volume-quota/kafka-config-template{{- end -}}
{{- define "volume-quota.configDir" -}}/opt/volume-quota/kafka-config{{- end -}}

{{/* The principal the ACL Job runs as: aclJob.principal, else the broker's. */}}
{{- define "volume-quota.aclJobPrincipal" -}}
{{- if .Values.aclJob.principal -}}
{{- .Values.aclJob.principal -}}
{{- else if .Values.aclJob.tls.secretName -}}
{{- fail "aclJob.tls.secretName is set: set aclJob.principal to the CN of that Secret's certificate, so that the chart can check it is a super user and the Job can name it" -}}
{{- else if .Values.kafka.enabled -}}
{{- .Values.kafka.brokerPrincipal -}}
{{- else -}}
{{- fail "kafka.enabled=false (attach mode) with aclJob.enabled needs aclJob.tls.secretName and aclJob.principal: a super user's client certificate for the existing cluster" -}}
{{- end -}}
{{- end -}}

{{/* The Service the sidecars' metrics are scraped through (its name is Prometheus' job). */}}
{{- define "volume-quota.metricsServiceName" -}}
{{- if .Values.kafka.enabled -}}
{{- include "volume-quota.headlessName" . -}}
{{- else -}}
{{- printf "%s-metrics" (include "volume-quota.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/*
"true" when the brokers run the Prometheus JMX exporter agent for the callback's metrics
(kafka.metrics), else empty. kafka.metrics.enabled null: on with the ServiceMonitor or the
PrometheusRule. Never without the callback (quota.enabled).
*/}}
{{- define "volume-quota.brokerMetricsEnabled" -}}
{{- $metrics := .Values.kafka.metrics | default dict -}}
{{- $enabled := $metrics.enabled -}}
{{- if kindIs "invalid" $enabled -}}
{{- $enabled = or .Values.serviceMonitor.enabled .Values.prometheusRule.enabled -}}
{{- end -}}
{{- if and $enabled .Values.quota.enabled -}}true{{- end -}}
{{- end -}}

{{/* The exporter configuration the image ships (deploy/container/jmx-exporter). */}}
{{- define "volume-quota.metricsConfigFile" -}}
{{- if .Values.kafka.metrics.kafkaMetrics -}}volume-quota-callback-and-kafka.yaml{{- else -}}volume-quota-callback.yaml{{- end -}}
{{- end -}}

{{/* The agent and its configuration in the broker pod (the broker-plugin volume). */}}
{{- define "volume-quota.metricsAgentJar" -}}
{{- if include "volume-quota.brokerImageHasPlugin" . -}}
{{- .Values.sidecar.image.metricsAgentPath -}}
{{- else -}}
{{- printf "%s/%s" (include "volume-quota.pluginDir" .) (base .Values.sidecar.image.metricsAgentPath) -}}
{{- end -}}
{{- end -}}

{{/* The broker JVM option that loads the agent (added to KAFKA_OPTS of the broker only). */}}
{{- define "volume-quota.metricsAgentOption" -}}
{{- $configDir := include "volume-quota.pluginDir" . -}}
{{- if include "volume-quota.brokerImageHasPlugin" . -}}
{{- $configDir = .Values.sidecar.image.metricsConfigDir -}}
{{- end -}}
{{- printf "-javaagent:%s=%d:%s/%s" (include "volume-quota.metricsAgentJar" .) (int .Values.kafka.metrics.port) $configDir (include "volume-quota.metricsConfigFile" .) -}}
{{- end -}}

{{/* Prometheus' job label of the brokers' agent targets (set by the ServiceMonitor). */}}
{{- define "volume-quota.brokerMetricsJob" -}}
{{- printf "%s-broker" (include "volume-quota.fullname" .) -}}
{{- end -}}

{{- define "volume-quota.metricsServiceComponent" -}}
{{- if .Values.kafka.enabled -}}kafka-headless{{- else -}}sidecar-metrics{{- end -}}
{{- end -}}

{{/* The broker JVM's GC log options: a rotation that fits the kafka-logs emptyDir. */}}
{{- define "volume-quota.gcLogOpts" -}}
{{- printf "-Xlog:gc*:file=/var/log/kafka/kafkaServer-gc.log:time,tags:filecount=%d,filesize=%dM" (int .Values.kafka.gcLog.fileCount) (int .Values.kafka.gcLog.fileSizeMiB) -}}
{{- end -}}

{{/* Refuse combinations that would leave every producer paused for good. */}}
{{- define "volume-quota.validate" -}}
{{- if and .Values.quota.enabled (not .Values.sidecar.enabled) -}}
{{- fail "quota.enabled=true needs sidecar.enabled=true: without the sidecar no decision file is ever written, and every broker applies quota.onMissing forever" -}}
{{- end -}}
{{- if gt (int64 .Values.quota.pauseBytesPerSecond) (int64 .Values.quota.produceBaseBytesPerSecond) -}}
{{- fail (printf "quota.pauseBytesPerSecond (%d) must not exceed quota.produceBaseBytesPerSecond (%d)" (int64 .Values.quota.pauseBytesPerSecond) (int64 .Values.quota.produceBaseBytesPerSecond)) -}}
{{- end -}}
{{- range $ceiling := list "pausePrincipalMaxBytesPerSecond" "pauseBrokerMaxBytesPerSecond" -}}
{{- if lt (int64 (index $.Values.quota $ceiling)) (int64 $.Values.quota.pauseBytesPerSecond) -}}
{{- fail (printf "quota.%s (%d) must not be below quota.pauseBytesPerSecond (%d): the PAUSE ceiling bounds the floor from above" $ceiling (int64 (index $.Values.quota $ceiling)) (int64 $.Values.quota.pauseBytesPerSecond)) -}}
{{- end -}}
{{- end -}}
{{- if .Values.kafka.enabled -}}
{{- $gcLogMiB := mul (add1 (int .Values.kafka.gcLog.fileCount)) (int .Values.kafka.gcLog.fileSizeMiB) -}}
{{- if gt (int $gcLogMiB) 512 -}}
{{- fail (printf "kafka.gcLog: (fileCount + 1) x fileSizeMiB = %d MiB, more than half of the 1Gi kafka-logs emptyDir (the kubelet evicts the pod past its sizeLimit)" (int $gcLogMiB)) -}}
{{- end -}}
{{- if ne (int .Values.sidecar.brokerIdOffset) 0 -}}
{{- fail "sidecar.brokerIdOffset must be 0 with kafka.enabled=true: this chart's brokers are numbered from 0 (node.id = pod ordinal)" -}}
{{- end -}}
{{- if eq .Values.sidecar.brokerIdSource "metaProperties" -}}
{{- fail "sidecar.brokerIdSource=metaProperties is for attach mode: this chart's sidecars see the volumes' mount points, not the logs/ directories holding meta.properties, and the pod index is the node.id already" -}}
{{- end -}}
{{- if and .Values.aclJob.enabled .Values.sidecar.enabled -}}
{{- $principal := printf "User:%s" (include "volume-quota.aclJobPrincipal" .) -}}
{{- if not (has $principal (splitList ";" (include "volume-quota.superUsers" .))) -}}
{{- fail (printf "the ACL Job runs as %s (aclJob.principal), which is not a super user (kafka.brokerPrincipal, kafka.superUsers: %s): the cluster would refuse every ACL it grants" $principal (include "volume-quota.superUsers" .)) -}}
{{- end -}}
{{- end -}}
{{- else -}}
{{- if not .Values.sidecar.enabled -}}
{{- fail "kafka.enabled=false (attach mode) needs sidecar.enabled=true: the sidecar is all this chart adds to an existing cluster" -}}
{{- end -}}
{{- if not .Values.attach.volumes -}}
{{- fail "kafka.enabled=false (attach mode) needs attach.volumes: the broker pod's volumes holding its log dirs (name, mountPath, logDir)" -}}
{{- end -}}
{{- $_ := include "volume-quota.bootstrapServers" . -}}
{{- if .Values.aclJob.enabled -}}
{{- $_ := include "volume-quota.aclJobPrincipal" . -}}
{{- end -}}
{{- if not .Values.attach.podSelector -}}
{{- fail "kafka.enabled=false (attach mode) needs attach.podSelector: the labels of the existing broker pods" -}}
{{- end -}}
{{- end -}}
{{- if and (eq (toString .Values.kafka.metrics.enabled) "true") (not .Values.quota.enabled) -}}
{{- fail "kafka.metrics.enabled=true needs quota.enabled=true: the brokers' agent exports the quota callback's metrics, which only a loaded callback has" -}}
{{- end -}}
{{- if and (include "volume-quota.brokerMetricsEnabled" .) (has (int .Values.kafka.metrics.port) (list (int .Values.sidecar.metricsPort) (int .Values.kafka.ports.client) (int .Values.kafka.ports.internal) (int .Values.kafka.ports.controller))) -}}
{{- fail (printf "kafka.metrics.port %d is already used by the sidecar or a Kafka listener" (int .Values.kafka.metrics.port)) -}}
{{- end -}}
{{- $_ := include "volume-quota.volumeLimits" . -}}
{{- if .Values.sidecar.enabled -}}
{{- $tls := .Values.sidecar.tls -}}
{{- if and (eq .Values.sidecar.snapshotSignatures "require") (not $tls.perBroker.enabled) (not $tls.volume) -}}
{{- fail "sidecar.snapshotSignatures=require needs one identity per broker (sidecar.tls.perBroker.enabled=true, or a per-pod sidecar.tls.volume): with the shared Secret no sidecar's certificate is its broker's own, every snapshot would be rejected and the cluster would PAUSE. Without csi-driver use snapshotSignatures=warn (or accept), not a production setting" -}}
{{- end -}}
{{- if and $tls.perBroker.enabled (not $tls.volume) -}}
{{- $_ := include "volume-quota.sidecarDnsName" . -}}
{{- end -}}
{{- if and (eq .Values.sidecar.overrideSignatures "require") (not .Values.sidecar.overrideSigners) -}}
{{- fail "sidecar.overrideSignatures=require needs sidecar.overrideSigners: the operator identities whose signed overrides take effect (e.g. CN=kafka-admin); otherwise no override could ever be set" -}}
{{- end -}}
{{- if and (ne .Values.sidecar.snapshotSignatures "accept") (not (include "volume-quota.signerIdentities" .)) -}}
{{- fail (printf "sidecar.snapshotSignatures=%s in attach mode needs sidecar.signerIdentities: who may sign for broker {broker}, e.g. DNS:<broker pod prefix>-{broker}.<headless service>.<namespace>.svc.cluster.local" .Values.sidecar.snapshotSignatures) -}}
{{- end -}}
{{- end -}}
{{- end -}}
