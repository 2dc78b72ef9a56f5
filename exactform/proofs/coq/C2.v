(** Claim C2 (docs/spec.md §3) about the construction: in the pieces block of every layer of
    [construct M Rs], evaluated at any input x where the shift constants bound the pieces, the
    identity pair of unit i and slot j is, in its owner token j, the piece's affine value
    a_{i,pad(j)}(h^{ℓ−1}(x)), and in every other token both ReLUs are off (pre-activations ≤ 0,
    summing to −2R_ij); the block writes into z_i of token t exactly a_{i,pad(t)}(h^{ℓ−1}(x)). *)
From Coq Require Import Reals QArith Qreals Lra Lia List Arith Bool.
From Exactform Require Import Defs Sums C1 C3.
Import ListNotations.
Open Scope R_scope.

(** * A net's layers split at layer ℓ *)

Lemma layer_blocks_app : forall T N Rs ls1 ls2 l nin,
  layer_blocks T N l nin (ls1 ++ ls2) Rs
  = layer_blocks T N l nin ls1 Rs ++ layer_blocks T N (l + length ls1) (last (nin :: map units ls1) O) ls2 Rs.
Proof.
  induction ls1 as [|L ls1 IH]; intros; simpl.
  - rewrite Nat.add_0_r. reflexivity.
  - rewrite IH. replace (S l + length ls1)%nat with (l + S (length ls1))%nat by lia. reflexivity.
Qed.

Lemma layer_blocks_len : forall T N Rs ls l nin, length (layer_blocks T N l nin ls Rs) = (3 * length ls)%nat.
Proof. induction ls; intros; simpl; auto. rewrite IHls. lia. Qed.

Lemma layers_eval_app : forall ls1 ls2 nin h,
  layers_eval (ls1 ++ ls2) nin h = layers_eval ls2 (last (nin :: map units ls1) O) (layers_eval ls1 nin h).
Proof. induction ls1 as [|L ls1 IH]; intros; cbn [app layers_eval map]; [reflexivity | rewrite IH; reflexivity]. Qed.

Lemma shifts_hold_app : forall T Rs ls1 ls2 l nin h, shifts_hold T Rs l nin (ls1 ++ ls2) h ->
  shifts_hold T Rs l nin ls1 h
  /\ shifts_hold T Rs (l + length ls1) (last (nin :: map units ls1) O) ls2 (layers_eval ls1 nin h).
Proof.
  induction ls1 as [|L ls1 IH]; intros ls2 l nin h H; simpl in *.
  - rewrite Nat.add_0_r. auto.
  - destruct H as [H1 H2]. destruct (IH ls2 (S l) (units L) (layer_eval L nin h) H2).
    replace (l + S (length ls1))%nat with (S l + length ls1)%nat by lia. auto.
Qed.

(** * The theorem *)

Theorem C2_pieces_block : forall (M : maxout) (Rs : shifts) (x : nat -> R) ls1 L ls2,
  well_formed M -> layers M = ls1 ++ L :: ls2 -> shifts_bound M Rs x ->
  let T := max_rank M in let N := max_width M in let tf := construct M Rs in
  let l := length ls1 in let nin := last (input_dim M :: map units ls1) O in
  let h := layers_eval ls1 (input_dim M) x in
  let f := pieces_ffb T N nin L (Rs l) in
  let X := blocks_eval hardmax T (width tf) (firstn (3 * l) (blocks tf)) (embed tf x) in
  nth_error (blocks tf) (3 * l) = Some (FF f) /\
  forall t i j, (t < T)%nat -> (i < units L)%nat -> (j < T)%nat ->
    let a := piece L nin h i (pad (rank L i) j) in
    let pre s := dot (width tf) (w1 f (2 * (i * T + j) + s)) (X t) + Q2R (b1 f (2 * (i * T + j) + s)) in
    pre O = a - Q2R (Rs l i j) * (if (j =? t)%nat then 0 else 1) /\
    pre 1%nat = - a - Q2R (Rs l i j) * (if (j =? t)%nat then 0 else 1) /\
    (j = t -> relu (pre O) - relu (pre 1%nat) = a) /\
    (j <> t -> pre O <= 0 /\ pre 1%nat <= 0 /\ pre O + pre 1%nat = - 2 * Q2R (Rs l i j)) /\
    ff_eval (width tf) f X t (c_z T N i) = piece L nin h i (pad (rank L i) t).
Proof.
  intros M Rs x ls1 L ls2 Hwf Hsplit Hs T N tf l nin h f X.
  destruct (wf_facts M Hwf) as [HT [HN Hls]]. fold T N in HT, HN, Hls.
  assert (Hd : (input_dim M <= N)%nat) by (apply HN; left; reflexivity).
  assert (Hblocks : blocks tf = layer_blocks T N 0 (input_dim M) ls1 Rs
                                ++ layer_blocks T N l nin (L :: ls2) Rs).
  { unfold tf, construct. cbn [blocks]. fold T N. rewrite Hsplit, layer_blocks_app. reflexivity. }
  assert (Hlen : length (layer_blocks T N 0 (input_dim M) ls1 Rs) = (3 * l)%nat) by apply layer_blocks_len.
  unfold shifts_bound in Hs. fold T in Hs. rewrite Hsplit in Hs.
  destruct (shifts_hold_app T Rs ls1 (L :: ls2) 0 (input_dim M) x Hs) as [Hs1 HsL].
  cbn [shifts_hold] in HsL. destruct HsL as [HsL _]. rewrite Nat.add_0_l in HsL. fold l nin h in HsL.
  assert (Hin : forall L', In L' ls1 -> (units L' <= N)%nat /\ forall i, (i < units L')%nat -> (1 <= rank L' i <= T)%nat).
  { intros. apply Hls. rewrite Hsplit. apply in_or_app. auto. }
  destruct (Hls L ltac:(rewrite Hsplit; apply in_or_app; right; left; reflexivity)) as [HnL HrL].
  assert (Hnin : (nin <= N)%nat).
  { apply HN. pose proof (last_in (input_dim M :: map units ls1) O ltac:(discriminate)) as Hl. fold nin in Hl.
    unfold widths. rewrite Hsplit, map_app. destruct Hl as [Hl|Hl]; [left; auto | right; apply in_or_app; left; auto]. }
  (* the state entering the pieces block *)
  assert (HX : agree T (lwidth T N) X (cstate T N (zeroext nin h) zero2 zero1)).
  { unfold X. rewrite Hblocks, firstn_app, Hlen, Nat.sub_diag, firstn_O, app_nil_r, <- Hlen, firstn_all.
    unfold tf, construct. cbn [width]. fold T N.
    apply (layers_correct T N Rs HT ls1 0 (input_dim M) x); auto. apply embed_correct; auto. }
  split.
  { rewrite Hblocks. rewrite nth_error_app2 by lia. rewrite Hlen, Nat.sub_diag. reflexivity. }
  intros t i j Ht Hi Hj a pre.
  assert (Hw : width tf = lwidth T N) by reflexivity.
  assert (Hpre : forall s, (s < 2)%nat ->
            pre s = Q2R (sgn s) * a - Q2R (Rs l i j) * (if (j =? t)%nat then 0 else 1)).
  { intros s Hs2. unfold pre, f, pieces_ffb. cbn [w1 b1]. rewrite Hw.
    assert (E : ((2 * (i * T + j) + s) / 2 = i * T + j)%nat) by (apply div_enc; lia).
    assert (Ms : ((2 * (i * T + j) + s) mod 2 = s)%nat) by (apply mod_enc; lia).
    assert (Ei : ((i * T + j) / T = i)%nat) by (rewrite Nat.mul_comm; apply div_enc; lia).
    assert (Ej : ((i * T + j) mod T = j)%nat) by (rewrite Nat.mul_comm; apply mod_enc; lia).
    rewrite E, Ms, Ei, Ej.
    rewrite (dot_agree T (lwidth T N) X _ _ t HX Ht).
    rewrite (pieces_dot T N nin L (Rs l) (zeroext nin h) zero1) by auto.
    unfold a, piece. rewrite Q2R_mult.
    replace (dot nin (wt L i (pad (rank L i) j)) (zeroext nin h)) with (dot nin (wt L i (pad (rank L i) j)) h).
    - ring.
    - unfold dot. apply rsum_ext. intros c Hc. unfold zeroext. rewrite ltb_true; auto. }
  rewrite (Hpre O), (Hpre 1%nat), sgn0, sgn1 by lia.
  split; [ring | split; [ring | split; [ | split]]].
  - intros <-. rewrite Nat.eqb_refl.
    replace (1 * a - Q2R (Rs l i j) * 0) with a by ring. replace (-1 * a - Q2R (Rs l i j) * 0) with (- a) by ring.
    apply relu_pair.
  - intros Hne. destruct (Nat.eqb_spec j t); [contradiction | ]. cbv iota.
    pose proof (Hsl := HsL i j Hi Hj). fold a in Hsl.
    pose proof (Rle_abs a). pose proof (Rle_abs (- a)). rewrite Rabs_Ropp in H0. lra.
  - (* the block's output in z_i *)
    assert (HP := pieces_eval T N nin L (Rs l) (zeroext nin h) zero1 HT Hnin HnL).
    assert (HB : agree T (lwidth T N) (block_eval hardmax T (lwidth T N) (pieces_block T N nin L (Rs l)) X)
                   (cstate T N (zeroext nin h) (fun t i => if (i <? units L)%nat
                      then piece L nin (zeroext nin h) i (pad (rank L i) t) else 0) zero1)).
    { eapply agree_trans; [apply block_agree, HX | ]. apply HP.
      intros i' j' Hi' Hj'. rewrite piece_zeroext. apply HsL; auto. }
    rewrite Hw. change (ff_eval (lwidth T N) f X t (c_z T N i))
      with (block_eval hardmax T (lwidth T N) (pieces_block T N nin L (Rs l)) X t (c_z T N i)).
    rewrite HB by (auto; unfold lwidth, c_z; lia). rewrite cs_z by lia.
    rewrite ltb_true, piece_zeroext by auto. reflexivity.
Qed.
