package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cloud-provider/options"

	"github.com/ccmkit/ccmkit/provider"
)

// TestHelpListsSubcommands: `ccm --help` names every subcommand main runs.
func TestHelpListsSubcommands(t *testing.T) {
	opts, err := options.NewCloudControllerManagerOptions()
	require.NoError(t, err)
	command := newCommand(opts, make(chan struct{}))
	var out bytes.Buffer
	command.SetOut(&out)
	command.SetArgs([]string{"--help"})
	require.NoError(t, command.Execute())
	for _, sub := range []string{provider.AdmissionPolicyCommand, provider.PlanCommand} {
		assert.Contains(t, out.String(), "\n  "+sub+" ", "--help names %s", sub)
		code, ran := provider.RunSubcommand("hcloud", []string{sub, "--help"}, &out, &out)
		assert.True(t, ran, "main runs %s", sub)
		assert.Equal(t, 2, code)
	}
}
