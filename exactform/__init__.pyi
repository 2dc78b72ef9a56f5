# The types of the lazy API (exactform/__init__.py loads exactform.api on first use).
from .api import (CheckResult as CheckResult, EquivResult as EquivResult, Error as Error, InputError as InputError,
                  MaxoutNet as MaxoutNet, NotProved as NotProved, SoftmaxResult as SoftmaxResult,
                  Transformer as Transformer, VerifyResult as VerifyResult, approx as approx, certify as certify,
                  check as check, compile as compile, equiv as equiv, evaluate as evaluate, from_torch as from_torch,
                  import_network as import_network, load as load, load_certificate as load_certificate,
                  load_maxout as load_maxout, load_transformer as load_transformer, save as save,
                  softmax as softmax, verify as verify)

__version__: str
__all__: list[str]
