"""Convert a PyTorch checkpoint into a validated safetensors file (the flowvision-convert tool).

    flowvision convert INPUT --model NAME [-o OUT.safetensors] [--verify]

All arguments go to flowvision.convert (`flowvision convert --help` shows them); its exit codes are
the command's own: 0 ok, 1 outputs differ from torchvision (--verify), 2 usage, 3 input file or output
folder not found, 5 unknown model, 6 unreadable checkpoint or one that does not fit the model, 9
--verify without torch.
"""
RAW_ARGS = True


def run(args):
    """Run ``flowvision.convert.main`` on the arguments after ``convert``."""
    from flowvision.convert import main

    return main(args.argv, prog="flowvision convert")
