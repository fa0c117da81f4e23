"""xgr2 C++ engine (internal; use the xgr2 package)."""

from collections.abc import Sequence
from typing import Annotated

import numpy
from numpy.typing import NDArray
from typing_extensions import CapsuleType


def _set_error_types(arg0: object, arg1: object, arg2: object, arg3: object, arg4: object, arg5: object, arg6: object, /) -> None: ...

def batch_fill_bitmask(states: Sequence[MatcherState], out: object | None, rows: Sequence[int], num_threads: int) -> None: ...

def batch_advance(states: Sequence[MatcherState], tokens: Sequence[int], num_threads: int) -> list[MatcherState | None]: ...

def clear_shared_automata() -> None: ...

def tree_masks(states: Sequence[MatcherState | None], parents: Annotated[NDArray[numpy.int32], dict(shape=(None, None), order='C', device='cpu', writable=False)], tokens: Annotated[NDArray[numpy.int32], dict(shape=(None, None), order='C', device='cpu', writable=False)], valid: Annotated[NDArray[numpy.bool_], dict(shape=(None, None), order='C', device='cpu', writable=False)], bitmask: Annotated[NDArray[numpy.int32], dict(shape=(None, None, None), order='C', device='cpu')], admissible: Annotated[NDArray[numpy.bool_], dict(shape=(None, None), order='C', device='cpu')], visited: Annotated[NDArray[numpy.bool_], dict(shape=(None, None), order='C', device='cpu')], max_nodes: int, num_threads: int) -> tuple[list[list[MatcherState | None]], list[bool]]: ...

def xla_ffi_targets() -> dict[str, CapsuleType]: ...

def json_text(value: object | None) -> str | None:
    """
    JSON text of a value built of dicts with string keys, lists, tuples, strings, ints, finite
    floats, bools and None (json.dumps's separators; non-ASCII characters raw); None for any
    other value, to be left to json.dumps.
    """

def json_format_ebnf(arg: str, /) -> str | None: ...

class GrammarIR:
    @staticmethod
    def from_ebnf(text: object, root: object) -> GrammarIR: ...

    @staticmethod
    def from_regex(pattern: object, search: bool = False) -> GrammarIR: ...

    @staticmethod
    def _numeric_range(integer: bool, minimum: str, maximum: str, exclusive_minimum: bool, exclusive_maximum: bool, multiple_of: str) -> GrammarIR | None: ...

    @staticmethod
    def _regex_set(a: str, b: str, op: str, min_len: int, max_len: int) -> GrammarIR: ...

    @staticmethod
    def _regex_set_accepts(a: str, b: str, op: str, min_len: int, max_len: int, texts: Sequence[str]) -> list[bool]: ...

    @staticmethod
    def from_json_schema(schema: object, any_whitespace: bool, indent: int, separators: tuple[str, str] | None, strict: bool, unsupported: int, resources: Sequence[tuple[str, str]] = [], any_order: bool = False) -> tuple[GrammarIR, list[str]]: ...

    @staticmethod
    def from_structural_tag(spec: object, tokenizer: TokenizerInfoCore | None) -> GrammarIR: ...

    @staticmethod
    def builtin_json_ebnf() -> str: ...

    def to_ebnf(self) -> str: ...

    @property
    def root_name(self) -> str: ...

    @property
    def rule_names(self) -> list[str]: ...

class MaskPool:
    def stats(self) -> tuple[int, int, int, int, int, int]: ...

    def clear(self) -> None: ...

    def set_limit(self, arg: int, /) -> None: ...

def mask_pool_for(arg: TokenizerInfoCore, /) -> MaskPool: ...

class TokenizerInfoCore:
    def __init__(self, encoded: Sequence[bytes], vocab_type: int, vocab_size: int, stop_ids: Sequence[int], special_ids: Sequence[int]) -> None: ...

    @property
    def vocab_size(self) -> int: ...

    @property
    def tokenizer_size(self) -> int: ...

    @property
    def vocab_type(self) -> int: ...

    @property
    def stop_ids(self) -> list[int]: ...

    @property
    def special_ids(self) -> list[int]: ...

    def decoded_vocab(self) -> list[bytes]: ...

class CompiledGrammarCore:
    def __init__(self, grammar: GrammarIR, tokenizer: TokenizerInfoCore, mask_cache: bool = True, precompute_all: bool = False, precompute_costliest: int = 0, direct_cold_walks: bool = True) -> None: ...

    @property
    def num_cached_node_masks(self) -> int: ...

    @property
    def num_automaton_nodes(self) -> int: ...

    def _make_lookup_keys(self, radius: int, repeats: int) -> int: ...

    @property
    def cache_memory_bytes(self) -> int: ...

    @property
    def memory_bytes(self) -> int: ...

    def precompute_all(self, num_threads: int = 0) -> None: ...

    def precompute_costliest(self, count: int, num_threads: int = 0) -> None: ...

    def precompute_in_background(self, count: int, num_threads: int = 0) -> BackgroundJob: ...

    def initial_state(self) -> MatcherState: ...

class BackgroundJob:
    """A job on the engine's shared thread pool; see xgr2.PrecomputeJob."""

    def cancel(self) -> None: ...

    def done(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...

    @property
    def pieces_done(self) -> int: ...

    @property
    def num_pieces(self) -> int: ...

class MatcherState:
    """
    An immutable point of a constrained decoding; see xgr2.MatcherState docs.
    """

    def try_advance(self, token_id: object) -> MatcherState | None:
        """
        The state after `token_id`, or None if the grammar rejects it. Raises InvalidTokenError for ids outside [0, vocab_size).
        """

    def advance(self, token_id: object) -> MatcherState:
        """
        The state after `token_id`.

        Raises TokenRejectedError if the grammar rejects it (this state stays valid)
        and InvalidTokenError for ids outside [0, vocab_size).
        """

    def advance_bytes(self, data: bytes) -> MatcherState:
        """
        The state after forced bytes; raises TokenRejectedError if they are not allowed.
        """

    def try_advance_bytes(self, data: bytes) -> MatcherState | None:
        """The state after forced bytes, or None if they are not allowed."""

    def accepts(self, token_id: object) -> bool:
        """Whether `token_id` is allowed here."""

    def fill_bitmask(self, out: object | None, row: int = 0) -> None:
        """
        Writes this state's allowed tokens into row `row` of `out`.

        `out` is a writable C-contiguous numpy int32 array [B, ceil(vocab_size/32)]; token t
        is bit t % 32 of word t // 32, 1 = allowed. Releases the GIL.
        """

    def jump_forward_bytes(self) -> bytes:
        """
        The longest byte string every continuation starts with; the state is unchanged.
        """

    def _jump_forward_past_whitespace(self) -> tuple[bytes, list[int]]:
        """
        (bytes, gaps): jump_forward_bytes() where optional whitespace is the only other choice, and
        the byte offsets where whitespace could go (for drafters that add the model's own).
        """

    def advance_text(self, text: object) -> MatcherState:
        """
        The state after forced UTF-8 text; raises TokenRejectedError if it is not allowed.
        """

    def jump_forward_text(self) -> str:
        """
        jump_forward_bytes() cut to whole UTF-8 characters, as str; "" when the state is inside a
        character, so its bytes are always a prefix of jump_forward_bytes().
        """

    def bitmask(self) -> Annotated[NDArray[numpy.int32], dict(shape=(None,))]:
        """
        A new int32 row of ceil(vocab_size/32) words with this state's allowed tokens.
        """

    def __reduce__(self) -> tuple[object, ...]: ...

    def __repr__(self) -> str: ...

    @property
    def is_terminated(self) -> bool: ...

    @property
    def can_terminate(self) -> bool: ...

    @property
    def num_tokens(self) -> int: ...

    @property
    def num_bytes(self) -> int: ...

    @property
    def memory_bytes(self) -> int:
        """
        Bytes of parser state this snapshot keeps alive.

        The Earley sets a parse from this state can still reach: one per open rule call (so it
        grows with nesting depth, not with the number of tokens) plus the current one. Sets
        shared with other snapshots (forks of one state, older states of the same generation)
        are counted in full by each of them, so the sum over snapshots overcounts; the compiled
        grammar's initial set is counted too. Allocator overhead is not.
        """

    @property
    def vocab_size(self) -> int: ...

    def __len__(self) -> int: ...
