(** The link with the code: nets, shift constants and boxes given as nested lists of rationals,
    and a Transformer flattened into one list of rationals (sizes first, then every matrix entry,
    row by row). tests/test_coq.py writes, for each net, the shift constants and domain of the
    Transformer `exactform compile` wrote, proves with [C3_checked] (its two booleans decided by
    [vm_compute]) that [construct net shifts] equals the net on that domain, and compares
    [flat_tf (construct net shifts)] entry by entry with the compiled JSON. *)
From Coq Require Import QArith ZArith List.
From Exactform Require Import Defs Bounds.
Import ListNotations.
Open Scope Q_scope.

Definition mk_layer (W : list (list (list Q))) (b : list (list Q)) : layer :=
  {| units := length W;
     rank := fun i => length (nth i b []);
     wt := fun i j c => nth c (nth j (nth i W []) []) 0;
     bs := fun i j => nth j (nth i b []) 0 |}.

Definition mk_maxout (d : nat) (ls : list layer) (A : list (list Q)) (c : list Q) : maxout :=
  {| input_dim := d; layers := ls; outputs := length c;
     rd_w := fun o k => nth k (nth o A []) 0;
     rd_b := fun o => nth o c 0 |}.

Definition mk_shifts (R : list (list (list Q))) : shifts :=
  fun l i j => nth j (nth i (nth l R []) []) 0.

(** The box [lower, upper], one interval per input. *)
Definition mk_box (lower upper : list Q) : box := combine lower upper.

Definition nat_q (n : nat) : Q := inject_Z (Z.of_nat n).
Definition tab1 (n : nat) (f : nat -> Q) : list Q := map f (seq 0 n).
Definition tab2 (m n : nat) (f : nat -> nat -> Q) : list Q := flat_map (fun r => tab1 n (f r)) (seq 0 m).

Definition flat_head (w : nat) (h : head) : list Q :=
  [nat_q (hq h); nat_q (hv h)] ++ tab2 (hq h) w (qm h) ++ tab2 (hq h) w (km h)
  ++ tab2 (hv h) w (vm h) ++ tab2 w (hv h) (om h).

Definition flat_block (w : nat) (b : block) : list Q :=
  match b with
  | FF f => [0; nat_q (hid f)] ++ tab2 (hid f) w (w1 f) ++ tab1 (hid f) (b1 f)
            ++ tab2 w (hid f) (w2 f) ++ tab1 w (b2 f)
  | ATT hs => [1; nat_q (length hs)] ++ flat_map (flat_head w) hs
  end.

Definition flat_tf (tf : transformer) : list Q :=
  let w := width tf in
  [nat_q (tokens tf); nat_q w; nat_q (tin tf); nat_q (touts tf); nat_q (out_token tf);
   nat_q (length (blocks tf))]
  ++ tab2 w (tin tf) (emb_w tf) ++ tab2 (tokens tf) w (emb_b tf)
  ++ flat_map (flat_block w) (blocks tf)
  ++ tab2 (touts tf) w (ro_w tf) ++ tab1 (touts tf) (ro_b tf).

(** Numerator and denominator of each entry, for printing. *)
Definition as_pairs (l : list Q) : list (Z * Z) := map (fun q => (Qnum q, Zpos (Qden q))) l.
