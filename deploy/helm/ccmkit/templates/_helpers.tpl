{{/* The chart name, or nameOverride. */}}
{{- define "ccmkit.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object's name: fullnameOverride, or the release name (with the
chart name unless the release name holds it). */}}
{{- define "ccmkit.fullname" -}}
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

{{/* The name of the Deployment (and, by default, of its ServiceAccount). */}}
{{- define "ccmkit.ccmName" -}}
{{- printf "%s-cloud-controller-manager" (include "ccmkit.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of the cluster-scoped RBAC objects' names, "<fullname>:". */}}
{{- define "ccmkit.rbacName" -}}
{{- printf "%s:cloud-controller-manager" (include "ccmkit.fullname" .) -}}
{{- end -}}

{{- define "ccmkit.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ccmkit.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: cloud-controller-manager
{{- end -}}

{{- define "ccmkit.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "ccmkit.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The ServiceAccount the CCM runs as. */}}
{{- define "ccmkit.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ccmkit.ccmName" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the cloud config, and its key. */}}
{{- define "ccmkit.cloudConfigSecret" -}}
{{- default (printf "%s-cloud-config" (include "ccmkit.fullname" .)) .Values.cloudConfig.existingSecret -}}
{{- end -}}

{{- define "ccmkit.cloudConfigKey" -}}
{{- if .Values.cloudConfig.existingSecret -}}
{{- .Values.cloudConfig.existingSecretKey -}}
{{- else -}}
cloud.yaml
{{- end -}}
{{- end -}}

{{/* The environment variable of the credential: <PROVIDER>_CLOUD_TOKEN, upper case, '-'
and '.' as '_' (as provider.ReadConfig reads it). */}}
{{- define "ccmkit.tokenEnv" -}}
{{- printf "%s_CLOUD_TOKEN" (.Values.cloudProvider | replace "-" "_" | replace "." "_" | upper) -}}
{{- end -}}

{{/* The provider name in ccmkit's metric names, cloudprovider_<this>_...: --cloud-provider
with '-' and '.' as '_' (ccmkit reduces it to [a-z0-9_]; the schema allows no other
character). */}}
{{- define "ccmkit.metricsProvider" -}}
{{- .Values.cloudProvider | replace "-" "_" | replace "." "_" -}}
{{- end -}}

{{/* ccmkit's event recorder's identity under --use-service-account-credentials. */}}
{{- define "ccmkit.cloudProviderClient" -}}
{{- printf "%s-cloud-provider" .Values.cloudProvider -}}
{{- end -}}

{{/* The sweeper's identity under --use-service-account-credentials (sweeper.ClientName). */}}
{{- define "ccmkit.sweeperClient" -}}
ccmkit-sweeper
{{- end -}}

{{/* The cloud config of the chart's Secret: cloudConfig.content, with the sweeper section
of the sweeper values appended when sweeper.enabled. The content may not have a sweeper
section of its own: the chart's values switch the sweeper on together with its RBAC. */}}
{{- define "ccmkit.cloudConfig" -}}
{{- $content := required "cloudConfig.content or cloudConfig.existingSecret is required" .Values.cloudConfig.content -}}
{{- $parsed := fromYaml $content -}}
{{- if hasKey $parsed "Error" -}}
{{- fail (printf "cloudConfig.content is not a YAML mapping: %s" (get $parsed "Error")) -}}
{{- end -}}
{{- if hasKey $parsed "sweeper" -}}
{{- fail "cloudConfig.content has a sweeper section: remove it and set the chart's sweeper.enabled, sweeper.gracePeriod and sweeper.interval, which also grant the sweeper its RBAC" -}}
{{- end -}}
{{- if not .Values.sweeper.enabled -}}
{{- $content -}}
{{- else -}}
{{- trimSuffix "\n" $content }}
# Added by the chart (sweeper.*).
sweeper:
  enabled: true
{{- with .Values.sweeper.gracePeriod }}
  gracePeriod: {{ . }}
{{- end }}
{{- with .Values.sweeper.interval }}
  interval: {{ . }}
{{- end }}
{{ end -}}
{{- end -}}

{{/* The upstream controllers' identities under --use-service-account-credentials, which
the client builder keeps in kube-system (not the release's namespace). */}}
{{- define "ccmkit.controllerClients" -}}
{{- list "node-controller" "service-controller" "route-controller" (include "ccmkit.cloudProviderClient" .) | toJson -}}
{{- end -}}

{{/* The leader election lease's namespace and name (the upstream defaults unless set). */}}
{{- define "ccmkit.leaseNamespace" -}}
{{- default "kube-system" .Values.leaderElection.leaseNamespace -}}
{{- end -}}

{{- define "ccmkit.leaseName" -}}
{{- default "cloud-controller-manager" .Values.leaderElection.leaseName -}}
{{- end -}}

{{/* --controllers: the route controller is added when routes are on. */}}
{{- define "ccmkit.controllers" -}}
{{- $controllers := list -}}
{{- if .Values.routes.configureCloudRoutes -}}
{{- range .Values.controllers -}}
{{- if ne . "-route" -}}
{{- $controllers = append $controllers . -}}
{{- end -}}
{{- end -}}
{{- if not (or (has "*" $controllers) (has "route" $controllers)) -}}
{{- $controllers = append $controllers "route" -}}
{{- end -}}
{{- else -}}
{{- $controllers = .Values.controllers -}}
{{- end -}}
{{- join "," $controllers -}}
{{- end -}}

{{- define "ccmkit.image" -}}
{{- if and .Values.image.digest .Values.image.tag -}}
{{- printf "%s:%s@%s" .Values.image.repository .Values.image.tag .Values.image.digest -}}
{{- else if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The monitors' scrape identity. */}}
{{- define "ccmkit.scraperName" -}}
{{- printf "%s-metrics-scraper" (include "ccmkit.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ccmkit.bearerTokenSecret" -}}
{{- default (printf "%s-token" (include "ccmkit.scraperName" .)) .Values.metrics.bearerTokenSecret.name -}}
{{- end -}}

{{/* The leader election rules for the lease named by the argument: get and update it,
create it the first time (create cannot be limited by name). */}}
{{- define "ccmkit.leaseRules" -}}
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  resourceNames: [{{ . | quote }}]
  verbs: [get, update]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [create]
{{- end -}}

{{/* The scrape settings both monitors share; the argument is a dict of root (the chart's
context) and monitor (its values). */}}
{{- define "ccmkit.scrapeEndpoint" -}}
{{- $root := .root -}}
{{- if not (or $root.Values.metrics.scraperClusterRole.create $root.Values.metrics.bearerTokenSecret.name) -}}
{{- fail "metrics: the monitors need a bearer token allowed to get /metrics: set metrics.scraperClusterRole.create=true, or metrics.bearerTokenSecret.name to a Secret of your own" -}}
{{- end -}}
scheme: https
path: /metrics
{{- with .monitor.interval }}
interval: {{ . }}
{{- end }}
{{- with .monitor.scrapeTimeout }}
scrapeTimeout: {{ . }}
{{- end }}
tlsConfig:
  insecureSkipVerify: true
authorization:
  type: Bearer
  credentials:
    name: {{ include "ccmkit.bearerTokenSecret" $root }}
    key: {{ $root.Values.metrics.bearerTokenSecret.key }}
{{- end -}}
