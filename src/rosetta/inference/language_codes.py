"""Three-letter language codes (ISO 639-2/3, as NLLB-200 writes them:
``fra_Latn``) as the two-letter ones (ISO 639-1) the language identifier
knows. Where ISO 639-3 splits a macrolanguage, the individual code NLLB-200
uses is listed too (``arb`` Modern Standard Arabic, ``pes`` Western Persian,
``zsm`` Standard Malay...)."""

from __future__ import annotations

TWO_LETTERS: dict[str, str] = {
    "afr": "af", "amh": "am", "ara": "ar", "arb": "ar", "asm": "as",
    "aze": "az", "azj": "az", "azb": "az", "bel": "be", "bul": "bg",
    "ben": "bn", "bre": "br", "bos": "bs", "cat": "ca", "ces": "cs",
    "cym": "cy", "dan": "da", "deu": "de", "ell": "el", "eng": "en",
    "epo": "eo", "spa": "es", "est": "et", "ekk": "et", "eus": "eu",
    "fas": "fa", "pes": "fa", "fin": "fi", "fra": "fr", "fry": "fy",
    "gle": "ga", "gla": "gd", "glg": "gl", "guj": "gu", "hau": "ha",
    "heb": "he", "hin": "hi", "hrv": "hr", "hat": "ht", "hun": "hu",
    "hye": "hy", "ind": "id", "ibo": "ig", "isl": "is", "ita": "it",
    "jpn": "ja", "jav": "jv", "kat": "ka", "kaz": "kk", "khm": "km",
    "kan": "kn", "kor": "ko", "kur": "ku", "kmr": "ku", "kir": "ky",
    "lat": "la", "lug": "lg", "lin": "ln", "lao": "lo", "lit": "lt",
    "lav": "lv", "lvs": "lv", "mlg": "mg", "plt": "mg", "mkd": "mk",
    "mal": "ml", "mon": "mn", "khk": "mn", "mar": "mr", "msa": "ms",
    "zsm": "ms", "mya": "my", "nep": "ne", "npi": "ne", "nld": "nl",
    "nor": "no", "nob": "no", "ori": "or", "ory": "or", "pan": "pa",
    "pol": "pl", "pus": "ps", "pbt": "ps", "por": "pt", "que": "qu",
    "quy": "qu", "ron": "ro", "rus": "ru", "san": "sa", "sin": "si",
    "slk": "sk", "slv": "sl", "som": "so", "sqi": "sq", "als": "sq",
    "srp": "sr", "swe": "sv", "swa": "sw", "swh": "sw", "tam": "ta",
    "tel": "te", "tha": "th", "tgl": "tl", "tur": "tr", "uig": "ug",
    "ukr": "uk", "urd": "ur", "uzb": "uz", "uzn": "uz", "vie": "vi",
    "xho": "xh", "yor": "yo", "zho": "zh", "zul": "zu", "kin": "rw",
    "sme": "se", "sna": "sn", "sot": "st", "arg": "an", "fao": "fo",
    "ltz": "lb", "wln": "wa", "bak": "ba", "mlt": "mt", "nno": "nn",
    "oci": "oc", "tgk": "tg", "tuk": "tk", "tat": "tt", "vol": "vo",
    "dzo": "dz", "nb": "no",
}  # fmt: skip
