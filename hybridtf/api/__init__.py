"""Public op functions with TF's names; each calls its registry entry.

Loading this package binds the registry's public-op namespaces (``registry.public_ops``) to
the modules below, so that gradient rules in the registry can use the public ops.
"""
from hybridtf.api import (array_ops, check_ops, collective_ops, control_flow_ops, image_ops,
                          linalg_ops, logging_ops, manip_ops, math_ops, nn_ops, scatter_ops,
                          segment_ops)
from hybridtf.eager import execute
from hybridtf.registry import public_ops

public_ops.bind(array_ops=array_ops, check_ops=check_ops, collective_ops=collective_ops,
                control_flow_ops=control_flow_ops, image_ops=image_ops, linalg_ops=linalg_ops,
                logging_ops=logging_ops, manip_ops=manip_ops, math_ops=math_ops, nn_ops=nn_ops,
                scatter_ops=scatter_ops, segment_ops=segment_ops, execute=execute)
