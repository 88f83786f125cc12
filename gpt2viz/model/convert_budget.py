"""The converter's budgets on the pickles it reads, checked on their bytes before anything is loaded, and
without torch: `python -m gpt2viz convert` runs these before it imports torch, so a hostile ckpt.pt or
meta.pkl is refused in one line in a fraction of a second (model/convert.py runs them again)."""

import zipfile
from pathlib import Path

from .pickle_budget import PickleRefused, check_pickle

# the budgets on what the converter reads, checked before anything is built from it: far above what
# nanoGPT writes (a character vocabulary is a few kB; a checkpoint's pickle indexes a few hundred
# tensors, its optimizer's state included), far below what would take a second to walk
META_MAX_BYTES = 16 * 2 ** 20
META_MAX_NODES = 1_000_000
META_MAX_DEPTH = 4  # meta -> itos -> symbol
CKPT_PICKLE_MAX_BYTES = 64 * 2 ** 20
CKPT_MAX_NODES = 1_000_000
CKPT_MAX_DEPTH = 32
# the opcodes that build dicts, lists, strings and integers (and the memo and framing around them);
# anything else (GLOBAL, REDUCE, BUILD, a tuple, a float, None...) is not a vocabulary file's
PLAIN_OPCODES = frozenset({
    "PROTO", "FRAME", "STOP", "MARK", "EMPTY_DICT", "DICT", "EMPTY_LIST", "LIST", "SETITEM", "SETITEMS",
    "APPEND", "APPENDS", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "UNICODE", "BININT", "BININT1",
    "BININT2", "INT", "LONG", "LONG1", "LONG4", "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET",
    "LONG_BINGET"})


class ConvertError(ValueError):
    """A file the converter cannot use; one line says what was found."""




def check_meta_bytes(path) -> bytes:
    """meta.pkl's bytes, once its size and every opcode are within the budget of a vocabulary file (dicts,
    lists, strings and integers, a million elements, 4 deep); else one line, and nothing of it run."""
    path = Path(path)
    size = path.stat().st_size
    if size > META_MAX_BYTES:
        raise ConvertError(f"{path.name} was refused without running it: {size:,} bytes, more than the "
                           f"{META_MAX_BYTES:,} a vocabulary file needs")
    data = path.read_bytes()
    try:  # reads the opcodes; runs none of them
        check_pickle(data, max_nodes=META_MAX_NODES, max_depth=META_MAX_DEPTH, allowed=PLAIN_OPCODES)
    except PickleRefused as e:
        if str(e).startswith("it is not a pickle"):
            raise ConvertError(f"{path.name} is not a pickle: {str(e).removeprefix('it is not a pickle: ')}") from None
        raise ConvertError(f"{path.name} was refused without running it: {e}; a vocabulary file holds only "
                           "dicts, lists, strings and integers") from None
    return data


def check_checkpoint_pickle(path: Path) -> None:
    """The budget on the pickle inside torch.save's zip, before torch.load builds (and hashes) one object of it."""
    refused = f"{path.name} was refused without loading it"
    if not zipfile.is_zipfile(path):
        raise ConvertError(f"{refused}: it is not the zip archive torch.save writes (a checkpoint saved by "
                           "torch 1.6 or later, as nanoGPT's train.py does)")
    try:
        with zipfile.ZipFile(path) as z:
            pickles = [i for i in z.infolist() if i.filename.count("/") == 1 and i.filename.endswith("/data.pkl")]
            if len(pickles) != 1:
                raise ConvertError(f"{refused}: it holds {len(pickles)} data.pkl records, where torch.save writes one")
            if pickles[0].file_size > CKPT_PICKLE_MAX_BYTES:
                raise ConvertError(f"{refused}: its data.pkl is {pickles[0].file_size:,} bytes, more than the "
                                   f"{CKPT_PICKLE_MAX_BYTES:,} a checkpoint's index of tensors needs")
            data = z.read(pickles[0])
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as e:
        first = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
        raise ConvertError(f"{refused}: its zip archive does not read: {first}") from None
    try:
        check_pickle(data, max_nodes=CKPT_MAX_NODES, max_depth=CKPT_MAX_DEPTH)
    except PickleRefused as e:
        raise ConvertError(f"{refused}: {e}") from None


def precheck(checkpoint, meta=None) -> None:
    """Both files' pickles within their budgets (the checks convert_nanogpt starts with), torch not needed."""
    if Path(checkpoint).is_file():
        check_checkpoint_pickle(Path(checkpoint))
    if meta is not None and Path(meta).is_file():
        check_meta_bytes(Path(meta))
