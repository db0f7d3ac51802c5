// Package deploy holds no code: it holds the test that validates the Kubernetes manifests
// in deploy/base (the kustomize base that runs the ccmkit cloud-controller-manager). The
// test decodes every manifest strictly into its typed API object and checks that the
// Deployment, the cloud config Secret, the ServiceAccount and the RBAC agree with each
// other and with what the cloud-controller-manager's controllers need. It also lints and
// renders the Helm chart in deploy/helm/ccmkit with helm, and checks that its defaults
// render what deploy/base holds, that with sweeper.enabled it renders the RBAC of
// deploy/base with the kustomize component deploy/components/sweeper, that its values
// change what they say, and that its Grafana dashboard and alerts query only the metrics
// and labels ccmkit registers (read by a small PromQL tokenizer, promql_test.go). Its
// TestDocsHelmAdmissionPolicy keeps the chart's admission policy
// (files/admission-policy.yaml) equal to what the built-in provider's admission-policy
// command prints for the chart's default cloud config (`make docs` rewrites it).
package deploy
