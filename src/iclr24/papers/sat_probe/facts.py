"""Factual queries with known answers for the real-model run of SAT Probe (Yuksekgonul et al.,
ICLR 2024, arXiv 2309.15098).

The paper's datasets (basketball players, football teams, movies, songs, CounterFact subsets;
pickles in microsoft/mechanistic-error-probe under a research licence) are not shipped; these
facts were written for this package: country -> capital, element -> chemical symbol and book ->
author, 288 in all, each a single-constraint query in the paper's User/Assistant format (the
constraint is the entity; the control span, a non-constraint word of the prompt, is the
attribute's name). The model's own greedy errors give the labels.

Popularity. The paper scores how well-known an entity is from external counts. We have no
corpus counts offline; the stand-in is read from the model's tokenizer, which was trained on
the model's pretraining text: byte-level BPE gives frequent strings few, low-id (early-merged)
tokens, so ``-Σ_t log(1 + id_t)`` over the entity's tokens (:func:`token_popularity`) is a
Zipf-style log-frequency proxy. It uses no test outcome. It is a weak proxy (it mostly counts
an entity's tokens and knows nothing of how often the fact itself was seen), so beating it
says little: the SmolLM2 claims report SAT Probe minus popularity and do not rule on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["FACT_TEMPLATES", "Fact", "factual_queries", "token_popularity"]

# relation -> (prompt with {entity}, control word in the prompt)
FACT_TEMPLATES = {
    "capital": (("User: Tell me the capital city of the country {entity}.\n"
                 "Assistant: The capital city is"), "capital"),
    "symbol": (("User: Tell me the chemical symbol of the element {entity}.\n"
                "Assistant: The chemical symbol is"), "symbol"),
    "author": (("User: Tell me the author of the book {entity}.\n"
                "Assistant: The author of the book is"), "author"),
}

_CAPITALS = """France:Paris; Germany:Berlin; Italy:Rome; Spain:Madrid; Portugal:Lisbon; Japan:Tokyo;
China:Beijing; India:New Delhi; Russia:Moscow; Canada:Ottawa; Mexico:Mexico City;
Brazil:Brasilia; Argentina:Buenos Aires; Chile:Santiago; Peru:Lima; Colombia:Bogota;
Venezuela:Caracas; Ecuador:Quito; Bolivia:Sucre; Uruguay:Montevideo; Paraguay:Asuncion;
Cuba:Havana; Jamaica:Kingston; Haiti:Port-au-Prince; Panama:Panama City; Honduras:Tegucigalpa;
Nicaragua:Managua; Guatemala:Guatemala City; Egypt:Cairo; Kenya:Nairobi; Nigeria:Abuja;
Ghana:Accra; Ethiopia:Addis Ababa; Morocco:Rabat; Algeria:Algiers; Tunisia:Tunis;
Libya:Tripoli; Sudan:Khartoum; Uganda:Kampala; Tanzania:Dodoma; Rwanda:Kigali; Senegal:Dakar;
Mali:Bamako; Niger:Niamey; Chad:N'Djamena; Angola:Luanda; Zambia:Lusaka; Zimbabwe:Harare;
Mozambique:Maputo; Madagascar:Antananarivo; Namibia:Windhoek; Botswana:Gaborone;
Somalia:Mogadishu; Eritrea:Asmara; Cameroon:Yaounde; Gabon:Libreville; Liberia:Monrovia;
Togo:Lome; Benin:Porto-Novo; Malawi:Lilongwe; Burundi:Gitega; Lesotho:Maseru;
Mauritania:Nouakchott; Australia:Canberra; New Zealand:Wellington; Fiji:Suva;
Indonesia:Jakarta; Malaysia:Kuala Lumpur; Thailand:Bangkok; Vietnam:Hanoi; Philippines:Manila;
Cambodia:Phnom Penh; Laos:Vientiane; Myanmar:Naypyidaw; Bangladesh:Dhaka; Pakistan:Islamabad;
Afghanistan:Kabul; Nepal:Kathmandu; Bhutan:Thimphu; Mongolia:Ulaanbaatar; Iran:Tehran;
Iraq:Baghdad; Syria:Damascus; Jordan:Amman; Lebanon:Beirut; Israel:Jerusalem; Turkey:Ankara;
Greece:Athens; Cyprus:Nicosia; Saudi Arabia:Riyadh; Yemen:Sanaa; Oman:Muscat; Qatar:Doha;
Kuwait:Kuwait City; Bahrain:Manama; Kazakhstan:Astana; Uzbekistan:Tashkent;
Kyrgyzstan:Bishkek; Tajikistan:Dushanbe; Turkmenistan:Ashgabat; Georgia:Tbilisi;
Armenia:Yerevan; Azerbaijan:Baku; Ukraine:Kyiv; Belarus:Minsk; Poland:Warsaw; Czechia:Prague;
Slovakia:Bratislava; Hungary:Budapest; Austria:Vienna; Switzerland:Bern; Belgium:Brussels;
Netherlands:Amsterdam; Denmark:Copenhagen; Norway:Oslo; Sweden:Stockholm; Finland:Helsinki;
Iceland:Reykjavik; Ireland:Dublin; Estonia:Tallinn; Latvia:Riga; Lithuania:Vilnius;
Romania:Bucharest; Bulgaria:Sofia; Serbia:Belgrade; Croatia:Zagreb; Slovenia:Ljubljana;
Albania:Tirana; Moldova:Chisinau; Montenegro:Podgorica; Malta:Valletta; Luxembourg:Luxembourg;
Sri Lanka:Colombo; South Korea:Seoul; North Korea:Pyongyang; Singapore:Singapore;"""

_SYMBOLS = """Hydrogen:H; Helium:He; Lithium:Li; Beryllium:Be; Boron:B; Carbon:C; Nitrogen:N; Oxygen:O;
Fluorine:F; Neon:Ne; Sodium:Na; Magnesium:Mg; Aluminium:Al; Silicon:Si; Phosphorus:P;
Sulfur:S; Chlorine:Cl; Argon:Ar; Potassium:K; Calcium:Ca; Scandium:Sc; Titanium:Ti;
Vanadium:V; Chromium:Cr; Manganese:Mn; Iron:Fe; Cobalt:Co; Nickel:Ni; Copper:Cu; Zinc:Zn;
Gallium:Ga; Germanium:Ge; Arsenic:As; Selenium:Se; Bromine:Br; Krypton:Kr; Rubidium:Rb;
Strontium:Sr; Yttrium:Y; Zirconium:Zr; Niobium:Nb; Molybdenum:Mo; Technetium:Tc; Ruthenium:Ru;
Rhodium:Rh; Palladium:Pd; Silver:Ag; Cadmium:Cd; Indium:In; Tin:Sn; Antimony:Sb; Tellurium:Te;
Iodine:I; Xenon:Xe; Caesium:Cs; Barium:Ba; Lanthanum:La; Cerium:Ce; Neodymium:Nd; Europium:Eu;
Gadolinium:Gd; Tungsten:W; Platinum:Pt; Gold:Au; Mercury:Hg; Lead:Pb; Bismuth:Bi; Polonium:Po;
Radon:Rn; Radium:Ra; Uranium:U; Plutonium:Pu;"""

_AUTHORS = """Nineteen Eighty-Four|George Orwell
Animal Farm|George Orwell
Pride and Prejudice|Jane Austen
Emma|Jane Austen
Hamlet|William Shakespeare
Macbeth|William Shakespeare
Romeo and Juliet|William Shakespeare
War and Peace|Leo Tolstoy
Anna Karenina|Leo Tolstoy
Crime and Punishment|Fyodor Dostoevsky
The Brothers Karamazov|Fyodor Dostoevsky
Moby-Dick|Herman Melville
The Great Gatsby|F. Scott Fitzgerald
To Kill a Mockingbird|Harper Lee
The Catcher in the Rye|J. D. Salinger
Brave New World|Aldous Huxley
Ulysses|James Joyce
Don Quixote|Miguel de Cervantes
One Hundred Years of Solitude|Gabriel Garcia Marquez
The Old Man and the Sea|Ernest Hemingway
A Farewell to Arms|Ernest Hemingway
Frankenstein|Mary Shelley
Dracula|Bram Stoker
Jane Eyre|Charlotte Bronte
Wuthering Heights|Emily Bronte
Great Expectations|Charles Dickens
Oliver Twist|Charles Dickens
A Tale of Two Cities|Charles Dickens
Les Miserables|Victor Hugo
The Hobbit|J. R. R. Tolkien
The Lord of the Rings|J. R. R. Tolkien
Harry Potter and the Philosopher's Stone|J. K. Rowling
The Adventures of Tom Sawyer|Mark Twain
Adventures of Huckleberry Finn|Mark Twain
The Odyssey|Homer
The Iliad|Homer
The Divine Comedy|Dante Alighieri
The Picture of Dorian Gray|Oscar Wilde
Lolita|Vladimir Nabokov
The Trial|Franz Kafka
The Metamorphosis|Franz Kafka
The Stranger|Albert Camus
The Grapes of Wrath|John Steinbeck
Of Mice and Men|John Steinbeck
Fahrenheit 451|Ray Bradbury
Slaughterhouse-Five|Kurt Vonnegut
The Handmaid's Tale|Margaret Atwood
Beloved|Toni Morrison
Madame Bovary|Gustave Flaubert
The Count of Monte Cristo|Alexandre Dumas
The Three Musketeers|Alexandre Dumas
Twenty Thousand Leagues Under the Seas|Jules Verne
Around the World in Eighty Days|Jules Verne
The Time Machine|H. G. Wells
The War of the Worlds|H. G. Wells
Alice's Adventures in Wonderland|Lewis Carroll
Treasure Island|Robert Louis Stevenson
The Jungle Book|Rudyard Kipling
Gulliver's Travels|Jonathan Swift
Robinson Crusoe|Daniel Defoe
The Canterbury Tales|Geoffrey Chaucer
Paradise Lost|John Milton
Middlemarch|George Eliot
The Little Prince|Antoine de Saint-Exupery
The Name of the Rose|Umberto Eco
The Alchemist|Paulo Coelho
Things Fall Apart|Chinua Achebe
Invisible Man|Ralph Ellison
Catch-22|Joseph Heller
On the Road|Jack Kerouac
The Sun Also Rises|Ernest Hemingway
Dune|Frank Herbert
Foundation|Isaac Asimov
Heart of Darkness|Joseph Conrad
Lord of the Flies|William Golding
Rebecca|Daphne du Maurier
The Secret Garden|Frances Hodgson Burnett
Little Women|Louisa May Alcott
Uncle Tom's Cabin|Harriet Beecher Stowe
The Scarlet Letter|Nathaniel Hawthorne"""


@dataclass(frozen=True)
class Fact:
    """One query: relation (a key of :data:`FACT_TEMPLATES`), entity (the constraint) and the
    ground-truth answer; ``prompt`` and ``control`` (the non-constraint word) follow."""

    relation: str
    entity: str
    answer: str

    @property
    def prompt(self) -> str:
        return FACT_TEMPLATES[self.relation][0].format(entity=self.entity)

    @property
    def control(self) -> str:
        return FACT_TEMPLATES[self.relation][1]


def _pairs(relation: str, text: str) -> list[Fact]:
    out = []
    for item in text.replace("\n", " ").split(";"):
        if item.strip():
            key, value = item.split(":")
            out.append(Fact(relation, key.strip(), value.strip()))
    return out


def _parse() -> tuple[Fact, ...]:
    facts = _pairs("capital", _CAPITALS) + _pairs("symbol", _SYMBOLS)
    for line in _AUTHORS.strip().splitlines():
        book, author = line.split("|")
        facts.append(Fact("author", book.strip(), author.strip()))
    return tuple(facts)


_FACTS = _parse()


def factual_queries(relations: Sequence[str] | None = None) -> tuple[Fact, ...]:
    """The shipped facts (all, or those of ``relations``), in a fixed order."""
    if relations is None:
        return _FACTS
    rels = list(relations)
    bad = [r for r in rels if r not in FACT_TEMPLATES]
    if not rels or bad:
        raise ValueError(f"relations must be a non-empty subset of {sorted(FACT_TEMPLATES)}, "
                         f"got {relations!r}")
    return tuple(f for f in _FACTS if f.relation in rels)


def token_popularity(entity: str, tokenizer) -> float:
    """-Σ_t log(1 + id_t) over the tokens of " " + entity (a byte-level BPE tokenizer's ids
    grow with merge order, i.e. fall with corpus frequency): higher = more frequent."""
    if not isinstance(entity, str) or not entity.strip():
        raise ValueError("entity must be a non-empty string")
    ids = np.asarray(tokenizer.encode((" " + entity).encode("utf-8")), dtype=np.float64)
    return float(-np.log1p(ids).sum())
