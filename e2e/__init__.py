"""The offline cluster: real kube-apiserver, Karpenter (kwok provider) and KWOK, driven by the stack's plan."""
