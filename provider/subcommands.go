package provider

import "io"

// SubcommandsHelp lists the subcommands RunSubcommand runs, for the help of a
// cloud-controller-manager's command (its cobra Long text, which --help prints):
//
//	command.Long += "\n\n" + provider.SubcommandsHelp
const SubcommandsHelp = `Subcommands (each with its own --help):
  ` + AdmissionPolicyCommand + `  print the ValidatingAdmissionPolicies that refuse malformed load balancer
                    annotations of this configuration, for kubectl apply -f -
  ` + PlanCommand + `              print what the manager would do when it starts (the load balancers it
                    keeps, adopts, takes over or creates, and what it would change; the
                    Node labels it would set otherwise), writing nothing`

// RunSubcommand runs the subcommand args[0] names (AdmissionPolicyCommand,
// PlanCommand) with the rest of args, and returns its exit code and true; it returns
// false when args name none of them, for the manager to start. defaultProvider is the
// default of --cloud-provider. A CCM's main calls it first:
//
//	if code, ok := provider.RunSubcommand("myprovider", os.Args[1:], os.Stdout, os.Stderr); ok {
//		os.Exit(code)
//	}
func RunSubcommand(defaultProvider string, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case AdmissionPolicyCommand:
		return RunAdmissionPolicyCommand(defaultProvider, args[1:], stdout, stderr), true
	case PlanCommand:
		return RunPlanCommand(defaultProvider, args[1:], stdout, stderr), true
	}
	return 0, false
}
